"""The columns every part of a sweep's tables agrees on.

A sweep writes many small Parquet parts; a column whose values are all missing
in one part would otherwise get another type there than in the rest, and the
parts would no longer read back as one table.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


class SweepError(ValueError):
    """A sweep that cannot run as asked; the message names the fix."""


#: the key of a game in every table
KEY = ("condition", "policy", "seed")
#: columns that may be all missing in one part (a game's winner, a model name...):
#: their type is fixed so that every part of a dataset reads back alike
NULLABLE_TYPES: dict[str, str] = {
    "winner": "string", "stop_reason": "string", "largest_component_colour": "string",
    "winner_is_majority_preference": "boolean", "largest_component_baseline_mean": "float64",
    "largest_component_baseline_p": "float64", "distinct_share": "float64",
    "template_similarity": "float64", "stubbornness": "float64", "model": "string", "message": "string",
    "reason": "string", "diary": "string", "answer": "string", "outcome": "string", "failed": "string",
    "text": "string", "to": "Int64", "message_to": "Int64",
    "tokens_to_50": "float64", "tokens_to_60": "float64", "tokens_to_70": "float64",
    "total_tokens_to_50": "float64", "total_tokens_to_60": "float64", "total_tokens_to_70": "float64",
    "rounds_to_50": "float64", "rounds_to_60": "float64", "rounds_to_70": "float64",
}


_ARROW_TYPES = {"string": "string", "boolean": "bool", "float64": "float64", "Int64": "int64"}


def rows_table(rows: Sequence[dict[str, Any]]):
    """Game rows as an Arrow table with the same column types in every part (fast for few rows)."""
    import pyarrow as pa

    records = [{k: (json.dumps(v, default=str) if isinstance(v, (list, tuple, dict)) else v) for k, v in r.items()}
               for r in rows]
    table = pa.Table.from_pylist(records)
    for i, name in enumerate(table.column_names):
        wanted = NULLABLE_TYPES.get(name)
        if wanted is not None:
            table = table.set_column(i, name, table.column(i).cast(_ARROW_TYPES[wanted]))
        elif pa.types.is_null(table.column(i).type):
            table = table.set_column(i, name, table.column(i).cast("string"))
    return table
