"""The type stub of the native module (python/ccfair/_core.pyi) declares exactly what
``ccfair._core`` exports, with the same parameters, so that it cannot drift from
crates/ccfair-py/src/lib.rs. Names that exist only in the stub, to describe values, begin
with an underscore and are a ``TypeAlias`` or a ``TypedDict``."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import ccfair
from ccfair import _core

PACKAGE = Path(ccfair.__file__).resolve().parent
STUB = PACKAGE / "_core.pyi"


def _stub() -> ast.Module:
    return ast.parse(STUB.read_text(), str(STUB))


def _is_typed_dict(node: ast.ClassDef, typed_dicts: set[str]) -> bool:
    return any(isinstance(b, ast.Name) and b.id in typed_dicts for b in node.bases)


def _declared(tree: ast.Module) -> tuple[dict[str, ast.AST], set[str]]:
    """(what the stub says the module exports, by name; the stub-only helper types)."""
    exported: dict[str, ast.AST] = {}
    helpers: set[str] = set()
    typed_dicts = {"TypedDict"}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            exported[node.name] = node
        elif isinstance(node, ast.ClassDef):
            if _is_typed_dict(node, typed_dicts):
                typed_dicts.add(node.name)
                helpers.add(node.name)
            else:
                exported[node.name] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if isinstance(node.annotation, ast.Name) and node.annotation.id == "TypeAlias":
                helpers.add(node.target.id)
            else:
                exported[node.target.id] = node
    return exported, helpers


def _stub_params(fn: ast.FunctionDef) -> list[tuple[str, bool]]:
    """(name, has a default) of each parameter, as the stub declares them."""
    args = fn.args
    plain = [*args.posonlyargs, *args.args]
    first_default = len(plain) - len(args.defaults)
    return [(a.arg, i >= first_default) for i, a in enumerate(plain)]


def _runtime_params(obj: object) -> list[tuple[str, bool]]:
    sig = inspect.signature(obj)  # from PyO3's __text_signature__
    return [(p.name, p.default is not inspect.Parameter.empty) for p in sig.parameters.values()]


def test_the_stub_declares_exactly_what_the_module_exports():
    exported, _ = _declared(_stub())
    assert set(exported) == set(_core.__all__)


def test_types_only_in_the_stub_are_private():
    _, helpers = _declared(_stub())
    assert helpers, "the stub describes its values with helper types"
    for name in helpers:
        assert name.startswith("_"), name
        assert not hasattr(_core, name), name


def test_functions_have_the_parameters_of_the_module():
    exported, _ = _declared(_stub())
    functions = {n: node for n, node in exported.items() if isinstance(node, ast.FunctionDef)}
    assert functions
    for name, node in functions.items():
        assert _stub_params(node) == _runtime_params(getattr(_core, name)), name


def test_emulation_has_the_methods_and_parameters_of_the_module():
    exported, _ = _declared(_stub())
    cls = exported["Emulation"]
    assert isinstance(cls, ast.ClassDef)
    methods = {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}
    runtime = {n for n in vars(_core.Emulation) if not n.startswith("_")}
    assert set(methods) - {"__init__"} == runtime
    # The constructor: the class's text signature has no `self`.
    assert _stub_params(methods["__init__"])[1:] == _runtime_params(_core.Emulation)
    for name in runtime:
        stub = [p for p, _ in _stub_params(methods[name])]
        assert stub == ["self"], name
        assert [p for p, _ in _runtime_params(getattr(_core.Emulation, name))] == ["self"]


def test_the_package_is_marked_typed():
    # PEP 561: py.typed makes type checkers read the package's annotations and the stub;
    # maturin ships every file of python/ccfair in the wheel.
    assert (PACKAGE / "py.typed").is_file()
    assert STUB.is_file()
