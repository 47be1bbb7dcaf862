"""The results schema, as the Rust core defines it (crates/ccfair-sim/src/schema.rs), and the
one list of a results directory's tables.

Every column of every results table, with its storage type, who fills it (``engine``: the
recorder of either backend; ``python``: names, spec and provenance added here) and what it
means. :mod:`ccfair.store.tables` builds every table in it before writing, so every run's
file of a table has the same columns in the same order and a plain
``pandas.read_parquet("DIR/timeseries")`` returns every column of every run.

Example:
    >>> [c["name"] for c in columns("links")][:4]
    ['run_id', 'link_name', 't_ns', 't_s']
    >>> VERSION >= 2
    True
    >>> WRITE_ORDER
    ('flows', 'timeseries', 'links', 'link_summary', 'runs')
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from ccfair import _core

_SCHEMA: dict[str, Any] = json.loads(_core.schema())

#: Version written into ``runs.schema_version``; bumped when a column changes.
VERSION: int = _SCHEMA["version"]
#: The tables of a run besides the marker, in the order a run's files are written.
TABLES: tuple[str, ...] = ("flows", "timeseries", "links", "link_summary")
#: The table whose file marks a finished run: written last, removed first.
MARKER_TABLE = "runs"
#: Every table of a results directory, in the order a run's files are written.
WRITE_ORDER: tuple[str, ...] = (*TABLES, MARKER_TABLE)
if set(WRITE_ORDER) != set(_SCHEMA["tables"]):  # pragma: no cover - a schema.rs change
    raise RuntimeError(f"the tables {WRITE_ORDER} are not the schema's {sorted(_SCHEMA['tables'])}")


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
