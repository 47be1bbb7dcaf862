"""The results schema, as the Rust core defines it (crates/ccfair-sim/src/schema.rs).

Every column of every results table, with its storage type, who fills it (``engine``: the
recorder of either backend; ``python``: names, spec and provenance added here) and what it
means. :mod:`ccfair.results` conforms every table to it before writing, so every run's
file of a table has the same columns in the same order and a plain
``pandas.read_parquet("DIR/timeseries")`` returns every column of every run.

Example:
    >>> from ccfair import schema
    >>> [c["name"] for c in schema.columns("links")][:4]
    ['run_id', 'link_name', 't_ns', 't_s']
    >>> schema.VERSION >= 2
    True
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from ccfair import _core

_SCHEMA: dict[str, Any] = json.loads(_core.schema())

#: Version written into ``runs.schema_version``; bumped when a column changes.
VERSION: int = _SCHEMA["version"]
#: Tables of a results directory (``runs`` last: its file marks a finished run).
TABLES: tuple[str, ...] = tuple(_SCHEMA["tables"])


def columns(table: str) -> list[dict[str, str]]:
    """The columns of ``table`` in storage order: ``name``, ``dtype``, ``by``, ``doc``."""
    return _SCHEMA["tables"][table]


def names(table: str) -> list[str]:
    """The column names of ``table`` in storage order."""
    return [c["name"] for c in columns(table)]


@cache
def arrow_schema(table: str) -> Any:
    """The pyarrow schema every file of ``table`` is written with."""
    import pyarrow as pa

    types = {
        "int64": pa.int64(),
        "float64": pa.float64(),
        "string": pa.string(),
        "bool": pa.bool_(),
    }
    return pa.schema([pa.field(c["name"], types[c["dtype"]]) for c in columns(table)])


def markdown(table: str) -> str:
    """The columns of ``table`` as a Markdown table (docs/results.md is checked against it)."""
    rows = [f"| `{c['name']}` | {c['dtype']} | {c['doc']} |" for c in columns(table)]
    return "\n".join(["| column | type | meaning |", "|---|---|---|", *rows])
