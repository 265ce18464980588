"""The columns every part of a sweep's tables agrees on.

A sweep writes many small Parquet parts; a column whose values are all missing
in one part would otherwise get another type there than in the rest, and the
parts would no longer read back as one table.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from llm_mesa.errors import LlmMesaError


class SweepError(LlmMesaError):
    """A sweep that cannot run as asked; the message names the fix."""


#: the key of a game in every table
KEY = ("condition", "policy", "seed")
#: columns the core itself adds to a game's rows that may be all missing in one part (a rule
#: game has no model): their type is fixed so that every part of a dataset reads back alike.
#: A game declares its own (``Game.row_types``, ``Table.types``); a sweep's manifest keeps them.
CORE_TYPES: dict[str, str] = {"model": "string", "prompt_template_hash": "string", "invalid": "boolean",
                              "decisions": "Int64", "failed_decisions": "Int64", "failure_cause": "string"}


_ARROW_TYPES = {"string": "string", "boolean": "bool", "float64": "float64", "Int64": "int64"}


def rows_table(rows: Sequence[dict[str, Any]], types: Mapping[str, str] | None = None):
    """Game rows as an Arrow table with the same column types in every part (fast for few rows)."""
    import pyarrow as pa

    records = [{k: (json.dumps(v, default=str) if isinstance(v, (list, tuple, dict)) else v) for k, v in r.items()}
               for r in rows]
    table = pa.Table.from_pylist(records)
    for i, name in enumerate(table.column_names):
        wanted = (types or CORE_TYPES).get(name)
        if wanted is not None:
            table = table.set_column(i, name, table.column(i).cast(_ARROW_TYPES[wanted]))
        elif pa.types.is_null(table.column(i).type):
            table = table.set_column(i, name, table.column(i).cast("string"))
    return table
