"""The package's layers (docs/architecture.md): `lint-imports` (scripts/test.sh) checks that
imports go down; this checks what it cannot see, that no function imports a ccfair module
(such an import is how a dependency upwards hides until it runs, and how cycles hid)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "ccfair"


def function_local_ccfair_imports(source: str) -> list[tuple[int, str]]:
    """(line, function) of every import of a ccfair module inside a function of ``source``."""
    found = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            if any(n == "ccfair" or n.startswith("ccfair.") for n in names):
                found.append((node.lineno, func.name))
    return found


def test_no_function_imports_a_ccfair_module():
    found = [
        f"{path.relative_to(PACKAGE.parent)}:{line} ({func})"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, func in function_local_ccfair_imports(path.read_text())
    ]
    assert found == []


def test_the_check_finds_an_import_in_a_function_and_not_at_the_top():
    source = (
        "import json\nfrom ccfair import backends\n\n"
        "def f():\n    import pandas\n    from ccfair.presets import PRESETS\n    return PRESETS\n"
    )
    assert function_local_ccfair_imports(source) == [(6, "f")]
