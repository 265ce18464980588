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


def failed_decisions(rows: Mapping[str, Any] | Any) -> int:
    """The failed LLM decisions of a game's row, or of a games table: the core's count (``failed_decisions``,
    filled from the decision ledger by its judge), and a game's own ``failures`` only where a row lacks it
    (a sweep written before the core counted). The progress line, the sweep's closing lines and the report
    all count with this, so none can read 0 while the rows hold failures."""
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        core, own = (pd.to_numeric(rows[c], errors="coerce").astype("Float64") if c in rows
                     else pd.Series(pd.NA, index=rows.index, dtype="Float64") for c in ("failed_decisions", "failures"))
        return int(core.fillna(own).fillna(0).sum())
    value = rows.get("failed_decisions")
    if value is None or value != value:  # absent, None or NaN
        value = rows.get("failures")
    return int(value) if value is not None and value == value else 0


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
