"""The longest functions of ccfair's Rust and Python sources, outside tests.

A review aid (issue 12 asks that no function outside tests and the Linux-mirroring
scoreboard code run past ~80 lines): prints ``lines  file:line  name`` for every function of
at least ``--min`` lines, longest first.

Python functions are measured with :mod:`ast` (first line of the ``def`` to the last line of
its body, less the docstring). Rust functions are found by their ``fn`` keyword and measured
to the matching closing brace, skipping strings, characters and comments; code inside
``#[cfg(test)]`` modules and files under ``tests/`` or named ``tests.rs`` is left out.

Example:
    python3 scripts/longest_functions.py --min 60
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def python_functions(path: Path) -> list[tuple[int, int, str]]:
    """(lines, first line, qualified name) of every function in a Python file."""
    tree = ast.parse(path.read_text(), str(path))
    out: list[tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                lines = child.end_lineno - child.lineno + 1
                first = child.body[0]
                if (
                    isinstance(first, ast.Expr)
                    and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)
                ):
                    lines -= first.end_lineno - first.lineno + 1  # the docstring is not code
                out.append((lines, child.lineno, name))
                visit(child, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")

    visit(tree, "")
    return out


def _code_only(text: str) -> str:
    """Rust source with comments, strings and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == "r" and re.match(r'r#*"', text[i:]):
            hashes = re.match(r"r(#*)\"", text[i:]).group(1)
            end = text.find('"' + hashes, i + 2 + len(hashes))
            j = n if end < 0 else end + 1 + len(hashes)
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(re.sub(r"[^\n]", " ", text[i : j + 1]))
            i = j + 1
        elif c == "'":
            m = re.match(r"'(\\.[^']*|[^\\'])'", text[i:])
            if m:  # a character literal; otherwise a lifetime
                out.append(" " * len(m.group(0)))
                i += len(m.group(0))
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def rust_functions(path: Path) -> list[tuple[int, int, str]]:
    """(lines, first line, name) of every function of a Rust file outside test modules."""
    code = _code_only(path.read_text())
    line_of = [0] * (len(code) + 1)
    line = 1
    for i, c in enumerate(code):
        line_of[i] = line
        if c == "\n":
            line += 1
    line_of[len(code)] = line
    # Test modules: `#[cfg(test)]` followed by `mod name {`: skip their spans.
    skip: list[tuple[int, int]] = []
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub\s+)?mod\s+\w+\s*\{", code):
        skip.append((m.start(), _matching(code, m.end() - 1)))
    out = []
    for m in re.finditer(r"\bfn\s+(\w+)", code):
        if any(a <= m.start() < b for a, b in skip):
            continue
        # The body starts at the first `{` after the signature (or there is none: `;`).
        j = m.end()
        depth = 0
        while j < len(code):
            ch = code[j]
            if ch in "([<":
                depth += 1
            elif ch in ")]>":
                depth -= 1 if code[j - 1] != "-" else 0
            elif ch == ";" and depth <= 0:
                j = -1
                break
            elif ch == "{" and depth <= 0:
                break
            j += 1
        if j < 0 or j >= len(code):
            continue
        end = _matching(code, j)
        out.append((line_of[end] - line_of[m.start()] + 1, line_of[m.start()], m.group(1)))
    return out


def _matching(code: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


def _is_test_file(path: Path) -> bool:
    parts = path.relative_to(ROOT).parts
    return "tests" in parts or path.name in ("tests.rs", "conftest.py") or "benches" in parts


def main(argv: list[str] | None = None) -> int:
    """Print the functions of at least ``--min`` lines, longest first."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--min", type=int, default=60, help="shortest function to list (lines)")
    args = ap.parse_args(argv)
    rows = []
    for path in sorted((ROOT / "python").rglob("*.py")):
        if not _is_test_file(path):
            rows += [
                (n, f"{path.relative_to(ROOT)}:{ln}", name)
                for n, ln, name in python_functions(path)
            ]
    for path in sorted((ROOT / "crates").rglob("*.rs")):
        if "target" in path.parts or _is_test_file(path):
            continue
        rows += [
            (n, f"{path.relative_to(ROOT)}:{ln}", name) for n, ln, name in rust_functions(path)
        ]
    rows.sort(key=lambda r: -r[0])
    for n, where, name in rows:
        if n >= args.min:
            print(f"{n:5d}  {where}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
