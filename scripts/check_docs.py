"""Check that the Markdown docs are true: their links, anchors and images exist, the ccfair
names their Python code and inline code use exist, and the ``ccfair`` command lines they show
use commands and options the command's parser knows.

    python3 scripts/check_docs.py [PATHS]

PATHS are Markdown files or directories (searched for ``*.md``); without any, the project's
README.md, CHANGELOG.md, benches/README.md and docs/. Prints one line per problem,
``FILE:LINE: what is wrong``, and exits with status 1 if there is any, 0 if none (2 for a
path that is not there). Nothing is fetched (external http(s) links are not checked) and no
code block is run: names are checked by importing modules and looking attributes up.

The rules, each a function below:
- ``check_links``: relative links and ``<img src>``/``<a href>`` point at files that exist
  (and are not ignored by git, so a clone has them too), and their ``#anchor`` at a heading
  (GitHub's slug) or an explicit ``id``/``name`` in the target Markdown file.
- ``check_images``: ``![alt](path)`` names a file that exists.
- ``check_python_names``: in fenced ``python`` blocks, ``import ccfair...`` and ``from
  ccfair... import`` import; dotted names from ccfair resolve; attributes of objects whose
  class is known (``r = ccfair.run(...)`` gives a ``RunResult`` by its return annotation)
  exist on that class; keyword arguments name parameters of the ccfair function called.
- ``check_inline_names``: inline code that starts with a dotted ccfair name (``ccfair.run``,
  ``Results.select(...)``, ``RunResult.flows``) names something that exists.
- ``check_cli``: ``ccfair COMMAND ... --option`` in shell blocks (every line of ``bash``/
  ``sh`` blocks, ``$ ``-prompted lines of the others) and in inline code: the command exists
  and each option is one its parser knows.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import re
import shlex
import subprocess
import sys
import textwrap
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
# The worktree's package first (as tests/conftest.py does), so the check reads these sources.
sys.path.insert(0, str(ROOT / "python"))

DEFAULT_PATHS = ("README.md", "CHANGELOG.md", "benches/README.md", "docs")

# Public classes that docs name bare (``Results.select``): the ccfair top-level names.
PUBLIC_CLASSES = ("Limits", "Results", "RunResult", "Scenario", "Sweep")


@dataclass(frozen=True)
class Problem:
    """One thing wrong in a Markdown file, printed as ``FILE:LINE: message``."""

    path: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


# --- Markdown: the parts the rules read -------------------------------------------------------


@dataclass
class CodeBlock:
    """A fenced code block: its info string's language, its first line's number, its lines."""

    lang: str
    line: int
    lines: list[str] = field(default_factory=list)


@dataclass
class Markdown:
    """A Markdown file split into prose lines (code blocks blanked) and fenced code blocks.

    Example:
        >>> md = Markdown.parse(Path("x.md"), "# A\\n```python\\nimport ccfair\\n```\\n")
        >>> md.prose, md.blocks[0].lang, md.blocks[0].line
        (['# A', '', '', ''], 'python', 3)
    """

    path: Path
    prose: list[str]
    blocks: list[CodeBlock]

    @classmethod
    def parse(cls, path: Path, text: str) -> Markdown:
        prose: list[str] = []
        blocks: list[CodeBlock] = []
        fence: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.lstrip()
            if fence is None:
                m = re.match(r"(`{3,}|~{3,})\s*([\w+-]*)", stripped)
                if m:
                    fence = m.group(1)
                    blocks.append(CodeBlock(m.group(2).lower(), number + 1))
                    prose.append("")
                else:
                    prose.append(line)
            else:
                if stripped.startswith(fence) and not stripped[len(fence) :].strip():
                    fence = None
                else:
                    blocks[-1].lines.append(line)
                prose.append("")
        return cls(path, prose, blocks)

    def inline_code(self) -> Iterator[tuple[int, str]]:
        """Each inline code span of the prose, with its line number."""
        for number, line in enumerate(self.prose, start=1):
            for m in re.finditer(r"(`+)(.+?)\1", line):
                yield number, m.group(2).strip()


@cache
def read_markdown(path: Path) -> Markdown:
    """The parsed Markdown file at ``path``."""
    return Markdown.parse(path, path.read_text(encoding="utf-8"))


def _without_code_spans(line: str) -> str:
    """The line with its inline code spans blanked (a link inside code is no link)."""
    return re.sub(r"(`+).+?\1", lambda m: " " * len(m.group(0)), line)


# --- Links, anchors and images ----------------------------------------------------------------


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: its text (markup removed) in lower case, every
    character but letters, digits, spaces, '-' and '_' removed, spaces turned into '-'.

    Example:
        >>> github_slug("Testbeds and host kernels")
        'testbeds-and-host-kernels'
        >>> github_slug("`ccfair run --json`: one run's flows")
        'ccfair-run---json-one-runs-flows'
        >>> github_slug("See [the model](model.md) (v2)")
        'see-the-model-v2'
    """
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links and images: their text
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every anchor of a Markdown file: its headings' slugs (a repeated slug gets -1, -2, ...
    as on GitHub) and explicit ``id="..."``/``name="..."`` attributes.

    Example:
        >>> import tempfile
        >>> p = Path(tempfile.mkdtemp()) / "a.md"
        >>> _ = p.write_text("# Setup\\n## Setup\\n<a id='here'></a>\\n")
        >>> sorted(anchors(p))
        ['here', 'setup', 'setup-1']
    """
    md = read_markdown(path)
    found: set[str] = set()
    seen: dict[str, int] = {}
    previous = ""
    for line in md.prose:
        heading = None
        m = re.match(r" {0,3}(#{1,6})\s+(.*?)(\s+#+)?\s*$", line)
        if m:
            heading = m.group(2)
        elif re.match(r" {0,3}(=+|-+)\s*$", line) and previous.strip():
            if not re.match(r"\s*([-*+|>#]|\d+\.)", previous):  # a setext heading
                heading = previous
        if heading is not None:
            slug = github_slug(heading)
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
        for m in re.finditer(r"\b(?:id|name)\s*=\s*[\"']([^\"']+)[\"']", line):
            found.add(m.group(1))
        previous = line
    return frozenset(found)


@cache
def _git_ignored(root: Path) -> frozenset[Path]:
    """Files and directories under ``root`` that git ignores (a clone lacks them); empty
    outside a git work tree."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--others", "--ignored", "--exclude-standard", "--directory"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except OSError:
        return frozenset()
    if out.returncode != 0:
        return frozenset()
    return frozenset((root / line.rstrip("/")).resolve() for line in out.stdout.splitlines())


def _git_root(path: Path) -> Path | None:
    for parent in [path, *path.parents]:
        if (parent / ".git").exists():
            return parent
    return None


def _missing(target: Path) -> str | None:
    """Why a linked file is not there for a reader of the repository, or None if it is."""
    if not target.exists():
        return "does not exist"
    root = _git_root(target.resolve().parent)
    if root is not None:
        ignored = _git_ignored(root)
        resolved = target.resolve()
        if any(p in ignored for p in [resolved, *resolved.parents]):
            return "is ignored by git (a clone does not have it)"
    return None


# A link's target: [text](target "title"), the text possibly begun on an earlier line.
_LINK = re.compile(r"(!?)\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^)]*)?\)")
_CONTINUED_LINK = re.compile(r"^[^\[]*?\]\(\s*<?([^)\s>]*)>?(?:\s+[\"'][^)]*)?\)")
_REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(\s|$)")
_HTML = re.compile(r"<(img|a|source)\b[^>]*?\b(src|href)\s*=\s*[\"']([^\"']*)[\"']", re.I)


def link_targets(md: Markdown) -> Iterator[tuple[int, str, bool]]:
    """Each link target of the prose: (line, target, whether it is an image).

    Example:
        >>> md = Markdown.parse(Path("x.md"), "[a](b.md#c) ![i](p.png) `[no](code)`")
        >>> list(link_targets(md))
        [(1, 'b.md#c', False), (1, 'p.png', True)]
    """
    for number, raw in enumerate(md.prose, start=1):
        line = _without_code_spans(raw)
        found = [(m.start(), m.group(2), m.group(1) == "!") for m in _LINK.finditer(line)]
        m = _CONTINUED_LINK.match(line)
        if m and not any(start < m.end() for start, _, _ in found):
            found.insert(0, (0, m.group(1), False))
        m = _REFERENCE.match(line)
        if m:
            found.append((0, m.group(1), False))
        for m in _HTML.finditer(line):
            found.append((m.start(), m.group(3), m.group(1).lower() == "img"))
        for _, target, image in found:
            yield number, target, image


def _resolve_target(md: Markdown, target: str) -> tuple[Path, str] | None:
    """The file and anchor a relative link names, or None for an external link."""
    if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
        return None  # http(s), mailto and other schemes: not fetched
    path_part, _, anchor = target.partition("#")
    path_part = urllib.parse.unquote(path_part.split("?")[0])
    if not path_part:
        return md.path, anchor
    if path_part.startswith("/"):
        root = _git_root(md.path.resolve().parent) or ROOT
        return root / path_part.lstrip("/"), anchor
    return md.path.parent / path_part, anchor


def check_links(md: Markdown) -> list[Problem]:
    """Relative links name files that exist, and their anchors exist in the target.

    Example: ``[spec](spec.md#testbeds)`` next to a spec.md without a heading "Testbeds"
    gives ``FILE:LINE: link spec.md#testbeds: no anchor "testbeds" in spec.md``.
    """
    problems = []
    for number, target, image in link_targets(md):
        if image:
            continue
        resolved = _resolve_target(md, target)
        if resolved is None:
            continue
        path, anchor = resolved
        why = _missing(path)
        if why is not None:
            problems.append(Problem(md.path, number, f"dead link {target}: {path.name} {why}"))
        elif anchor and path.suffix == ".md" and path.is_file():
            if anchor not in anchors(path.resolve()):
                problems.append(
                    Problem(
                        md.path,
                        number,
                        f'dead anchor {target}: no heading or id "{anchor}" in {path.name}',
                    )
                )
    return problems


def check_images(md: Markdown) -> list[Problem]:
    """Images (``![alt](path)``, ``<img src="path">``) name files that exist.

    Example: ``![CWND](figures/cwnd.png)`` without that file gives
    ``FILE:LINE: missing image figures/cwnd.png: cwnd.png does not exist``.
    """
    problems = []
    for number, target, image in link_targets(md):
        if not image:
            continue
        resolved = _resolve_target(md, target)
        if resolved is None:
            continue
        why = _missing(resolved[0])
        if why is not None:
            problems.append(
                Problem(md.path, number, f"missing image {target}: {resolved[0].name} {why}")
            )
    return problems


# --- ccfair names -----------------------------------------------------------------------------


class Unknown:
    """A value whose kind the check does not know: nothing about it is checked."""


UNKNOWN = Unknown()


@dataclass(frozen=True)
class Instance:
    """An instance of a ccfair class (known from a constructor call or a return annotation)."""

    cls: type


def _is_ccfair(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or getattr(obj, "__name__", "")
    return isinstance(module, str) and module.split(".")[0] == "ccfair"


@cache
def _instance_attributes(cls: type) -> frozenset[str]:
    """Attributes an instance of ``cls`` has that its class does not show: annotated fields
    (dataclasses, pydantic, NamedTuple) and ``self.NAME = ...`` in its methods' sources."""
    names: set[str] = set()
    for klass in cls.__mro__:
        names.update(getattr(klass, "__annotations__", {}))
        names.update(getattr(klass, "model_fields", {}) or {})
        try:
            tree = ast.parse(inspect.getsource(klass))
        except (OSError, TypeError, SyntaxError):
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.ctx, ast.Store)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                names.add(node.attr)
    return frozenset(names)


def _annotation_class(func: Any, annotation: Any) -> Any:
    """The ccfair class an annotation names (``"RunResult"``, ``Results | None``), or
    UNKNOWN."""
    if isinstance(annotation, type):
        return Instance(annotation) if _is_ccfair(annotation) else UNKNOWN
    if not isinstance(annotation, str):
        return UNKNOWN
    parts = [p.strip().strip("'\"") for p in annotation.split("|")]
    parts = [p for p in parts if p != "None"]
    if len(parts) != 1 or not re.fullmatch(r"[\w.]+", parts[0]):
        return UNKNOWN
    name = parts[0]
    namespace = dict(getattr(func, "__globals__", {}))
    value = namespace.get(name.split(".")[0])
    if value is None:
        import ccfair

        try:
            value = getattr(ccfair, name.split(".")[0])
        except AttributeError:
            return UNKNOWN
    for attr in name.split(".")[1:]:
        value = getattr(value, attr, None)
    if isinstance(value, type) and _is_ccfair(value):
        return Instance(value)
    return UNKNOWN


def _returns(func: Any) -> Any:
    """What calling ``func`` gives: its return annotation's class, else (an annotation such as
    ``Any``, kept so as not to import a higher layer) the class every ``return`` of its
    source constructs (``return RunPlots(self)``)."""
    if isinstance(func, type):
        return Instance(func) if _is_ccfair(func) else UNKNOWN
    func = getattr(func, "__func__", func)  # methods, classmethods, staticmethods
    annotation = getattr(func, "__annotations__", {}).get("return")
    known = UNKNOWN if annotation is None else _annotation_class(func, annotation)
    return known if isinstance(known, Instance) else _constructed(func)


def _constructed(func: Any) -> Any:
    """The ccfair class that every ``return`` of ``func`` constructs, or UNKNOWN.

    Example:
        >>> from ccfair.results.run import RunResult
        >>> _constructed(RunResult.plot.fget).cls.__name__
        'RunPlots'
    """
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return UNKNOWN
    returned = {
        ast.unparse(node.value.func)
        for node in ast.walk(tree)
        if isinstance(node, ast.Return)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
    }
    returns = [node for node in ast.walk(tree) if isinstance(node, ast.Return)]
    if len(returned) != 1 or len(returns) != sum(
        isinstance(r.value, ast.Call) and isinstance(r.value.func, ast.Name) for r in returns
    ):
        return UNKNOWN
    (name,) = returned
    imports = {  # names imported inside the function (a higher layer's, imported late)
        alias.asname or alias.name: (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }
    if name in imports:
        module, attr = imports[name]
        try:
            value = getattr(importlib.import_module(module), attr, None)
        except ImportError:
            return UNKNOWN
    else:
        value = getattr(func, "__globals__", {}).get(name)
    return Instance(value) if isinstance(value, type) and _is_ccfair(value) else UNKNOWN


def _member(cls: type, attr: str) -> tuple[bool, Any]:
    """Whether instances of ``cls`` have ``attr``, and what it is (a property's value as its
    getter's return annotation says)."""
    if any("__getattr__" in vars(k) and _is_ccfair(k) for k in cls.__mro__):
        return True, UNKNOWN  # attributes made on demand: not checked
    if attr.startswith("_") and not attr.startswith("__"):
        return True, UNKNOWN  # private (pydantic makes its private attributes on demand)
    try:
        static = inspect.getattr_static(cls, attr)
    except AttributeError:
        return attr in _instance_attributes(cls), UNKNOWN
    if isinstance(static, property):
        return True, _returns(static.fget)
    if isinstance(static, (staticmethod, classmethod)) or inspect.isfunction(static):
        return True, getattr(cls, attr)
    return True, UNKNOWN


_SIGNATURE = re.compile(r"\s*([A-Za-z_][\w.]*)\((.*)\)\s*(->[^#\n]*)?(#.*)?\s*", re.S)


def _parses(line: str) -> bool:
    try:
        ast.parse(line.strip())
    except SyntaxError:
        return False
    return True


@dataclass
class NameChecker:
    """Resolves the names of Python code that come from ccfair, and lists those that do not
    exist. ``env`` maps names bound by imports and assignments to modules, objects or
    ``Instance``s.

    Example:
        >>> c = NameChecker()
        >>> c.check_code("import ccfair\\nr = ccfair.run(ccfair.dumbbell(2, 'reno'))\\nr.nope")
        >>> c.errors
        [(3, 'RunResult has no attribute nope')]
    """

    env: dict[str, Any] = field(default_factory=dict)
    errors: list[tuple[int, str]] = field(default_factory=list)

    def check_code(self, code: str) -> None:
        """Checks a block of code (doctest prompts ``>>> `` and ``... `` are removed). A block
        that is not Python is checked as a listing of signatures (``name(arg: type = default,
        ...) -> Type``, one per line or one for the block), else reported."""
        if re.search(r"^\s*>>> ", code, re.M):
            code = "\n".join(  # output lines blanked, so that line numbers stay
                re.sub(r"^\s*(>>>|\.\.\.) ?", "", line)
                if re.match(r"\s*(>>>|\.\.\.)", line)
                else ""
                for line in code.splitlines()
            )
        try:
            tree = ast.parse(code)
        except SyntaxError as e:
            error = (e.lineno or 1, f"python block does not parse: {e.msg}")
        else:
            for statement in tree.body:
                self._statement(statement)
            return
        if self._signature(code, 1):
            return
        lines = [
            (number, re.sub(r"\s+#[^\"']*$", "", line))  # without a trailing comment
            for number, line in enumerate(code.splitlines(), start=1)
            if line.strip() and not line.lstrip().startswith("#")
        ]
        if not all(_parses(line) or _SIGNATURE.fullmatch(line) for _, line in lines):
            self.errors.append(error)
            return
        for number, line in lines:  # a listing: signatures and statements, one per line
            if _parses(line):
                for statement in ast.parse(line.strip()).body:
                    self._statement(ast.increment_lineno(statement, number - 1))
            elif not self._signature(line, number):
                self.errors.append((number, "python block does not parse"))

    def _signature(self, text: str, line: int) -> bool:
        """Checks ``name(parameters) -> Type`` against the signature of what ``name`` is:
        the same parameter names. False if ``text`` is no such listing.

        Example: ``dumbbell(n_flows: int = 2, *, rate="50Mbit/s") -> Scenario`` gives
        ``dumbbell() has no parameter rate`` and ``... lacks ccas, ...``.
        """
        m = _SIGNATURE.fullmatch(text)
        if not m:
            return False
        try:
            definition = ast.parse(f"def _(\n{m.group(2)}\n): pass").body[0]
            name = ast.parse(m.group(1), mode="eval").body
        except SyntaxError:
            return False
        # A listing names an instance by its class in lower case: `scenario.to_dict() -> dict`.
        import ccfair

        saved = dict(self.env)
        for cls_name in PUBLIC_CLASSES:
            self.env.setdefault(cls_name.lower(), Instance(getattr(ccfair, cls_name)))
        ast.increment_lineno(name, line - 1)
        func = self.evaluate(name)
        self.env = saved
        if isinstance(func, Unknown) or not callable(func):
            return True
        try:
            real = inspect.signature(func)
        except (TypeError, ValueError):
            return True
        assert isinstance(definition, ast.FunctionDef)
        documented = definition.args
        real_names = [p for p in real.parameters if p not in ("self", "cls")]
        listed = [
            a.arg
            for a in [
                *documented.posonlyargs,
                *documented.args,
                documented.vararg,
                *documented.kwonlyargs,
                documented.kwarg,
            ]
            if a is not None
        ]
        shown = m.group(1)
        extra = [p for p in listed if p not in real_names]
        lacking = [p for p in real_names if p not in listed]
        if extra:
            self.errors.append((line, f"{shown}() has no parameter {', '.join(extra)}"))
        if lacking:
            self.errors.append((line, f"{shown}(...) as listed lacks {', '.join(lacking)}"))
        return True

    def _error(self, node: ast.AST, message: str) -> None:
        self.errors.append((getattr(node, "lineno", 1), message))

    def _import(self, node: ast.AST, module: str) -> Any:
        try:
            return importlib.import_module(module)
        except ImportError as e:
            self._error(node, f"import {module}: {e}")
            return UNKNOWN

    def _statement(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "ccfair":
                    continue
                module = self._import(node, alias.name)
                if alias.asname:
                    self.env[alias.asname] = module
                elif module is not UNKNOWN:
                    self.env["ccfair"] = importlib.import_module("ccfair")
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").split(".")[0] != "ccfair" or node.level:
                return
            module = self._import(node, node.module or "")
            for alias in node.names:
                if module is UNKNOWN or alias.name == "*":
                    continue
                value = self._attribute(node, module, alias.name, f"{node.module}.{alias.name}")
                self.env[alias.asname or alias.name] = value
        elif isinstance(node, ast.Assign):
            value = self.evaluate(node.value)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    self.env[target.id] = value
                else:
                    self._unbind(target)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self._statement(child)
                elif isinstance(child, ast.expr):
                    if isinstance(getattr(child, "ctx", None), ast.Store):
                        self._unbind(child)
                    else:
                        self.evaluate(child)
                elif isinstance(child, ast.arguments):
                    for arg in [*child.posonlyargs, *child.args, *child.kwonlyargs]:
                        self.env.pop(arg.arg, None)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.env.pop(node.name, None)

    def _unbind(self, target: ast.expr) -> None:
        for node in ast.walk(target):
            if isinstance(node, ast.Name):
                self.env.pop(node.id, None)

    def _attribute(self, node: ast.AST, base: Any, attr: str, shown: str) -> Any:
        """``base.attr``, reporting it if it does not exist."""
        if isinstance(base, Unknown):
            return UNKNOWN
        if isinstance(base, Instance) or (isinstance(base, type) and _is_ccfair(base)):
            cls = base.cls if isinstance(base, Instance) else base
            exists, value = _member(cls, attr)
            if not exists:
                self._error(node, f"{cls.__name__} has no attribute {attr}")
                return UNKNOWN
            if isinstance(base, type) and not isinstance(value, Instance):
                return getattr(cls, attr, UNKNOWN)  # a class's own attribute, as it is
            return value
        if inspect.ismodule(base) and _is_ccfair(base):
            if hasattr(base, attr):
                return getattr(base, attr)
            try:
                return importlib.import_module(f"{base.__name__}.{attr}")
            except ImportError:
                self._error(node, f"{shown}: {base.__name__} has no {attr}")
                return UNKNOWN
        if _is_ccfair(type(base)) and not isinstance(base, type):
            return self._attribute(node, Instance(type(base)), attr, shown)
        return UNKNOWN

    def evaluate(self, node: ast.expr) -> Any:
        """What an expression is, checking every ccfair name in it on the way."""
        if isinstance(node, ast.Name):
            return self.env.get(node.id, UNKNOWN)
        if isinstance(node, ast.Attribute):
            base = self.evaluate(node.value)
            return self._attribute(node, base, node.attr, ast.unparse(node))
        if isinstance(node, ast.Call):
            func = self.evaluate(node.func)
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                self.evaluate(arg)
            return self._call(node, func)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.evaluate(child)
        return UNKNOWN

    def _call(self, node: ast.Call, func: Any) -> Any:
        """What the call gives; its keyword arguments must be parameters of a ccfair
        callable that takes no ``**kwargs``."""
        if isinstance(func, Unknown) or not callable(func) or not _is_ccfair(func):
            return UNKNOWN
        try:
            signature = inspect.signature(func)
        except (TypeError, ValueError):
            signature = None
        if signature is not None:
            parameters = signature.parameters.values()
            if not any(p.kind is p.VAR_KEYWORD for p in parameters):
                names = {p.name for p in parameters}
                name = getattr(func, "__qualname__", getattr(func, "__name__", "?"))
                for keyword in node.keywords:
                    if keyword.arg is not None and keyword.arg not in names:
                        self._error(node, f"{name}() has no parameter {keyword.arg}")
        return _returns(func)


def check_python_names(md: Markdown) -> list[Problem]:
    """Fenced ``python`` blocks import and use only ccfair names that exist.

    Example: a block ``from ccfair import run_all`` gives
    ``FILE:LINE: import ccfair.run_all: ...`` (no such name) and ``r.plot.delay()`` after
    ``r = ccfair.run(...)`` gives ``RunPlots has no attribute delay``.
    """
    import ccfair

    problems = []
    checker = NameChecker(env={"ccfair": ccfair})  # the file's blocks read as one session
    for block in md.blocks:
        if block.lang not in ("python", "py", "pycon"):
            continue
        checker.errors = []
        checker.check_code("\n".join(block.lines))
        for line, message in checker.errors:
            problems.append(Problem(md.path, block.line + line - 1, message))
    return problems


_INLINE_NAME = re.compile(r"([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(\(|$)")


def check_inline_names(md: Markdown) -> list[Problem]:
    """Inline code that begins with a dotted name from ccfair names something that exists:
    ``ccfair.a.b`` by import and attribute; ``Results.x`` (and the other public classes,
    bare) as an attribute of ``ccfair.Results``; ``res.x`` where the file's Python blocks
    above it bound ``res`` (``res = ccfair.Results(...)``) as an attribute of what they bound.

    Example: `` `Results.runs_table()` `` gives ``Results has no attribute runs_table``.
    """
    import ccfair

    env: dict[str, Any] = {"ccfair": ccfair}
    env.update((name, getattr(ccfair, name)) for name in PUBLIC_CLASSES)
    session = NameChecker(env=dict(env))  # the file's blocks, as check_python_names runs them
    blocks = [b for b in md.blocks if b.lang in ("python", "py", "pycon")]
    problems = []
    for number, code in md.inline_code():
        while blocks and blocks[0].line < number:
            session.check_code("\n".join(blocks.pop(0).lines))
        m = _INLINE_NAME.match(code)
        if not m:
            continue
        names = {**session.env, **env}
        if isinstance(names.get(m.group(1).split(".")[0], UNKNOWN), Unknown):
            continue
        checker = NameChecker(env=names)
        checker.evaluate(ast.parse(m.group(1), mode="eval").body)
        problems.extend(Problem(md.path, number, message) for _, message in checker.errors)
    return problems


# --- The command line -------------------------------------------------------------------------


@cache
def _commands() -> dict[str, argparse.ArgumentParser]:
    """The ``ccfair`` command's subcommands and their parsers (from ccfair.cli.parser)."""
    from ccfair.cli.parser import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise RuntimeError("ccfair's parser has no commands")


# Words before a command that run it: `sudo ccfair ...`, `chrt -i 0 ccfair ...`.
_WRAPPERS = {"sudo": 0, "time": 0, "env": 0, "nice": 0, "exec": 0, "chrt": 2, "timeout": 1}


def ccfair_commands(line: str) -> Iterator[list[str]]:
    """The arguments of each ``ccfair`` command in a shell line (after ``ccfair``).

    Example:
        >>> list(ccfair_commands("pip install . && sudo python3 -m ccfair run --json # x"))
        [['run', '--json']]
    """
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        tokens = list(lexer)
    except ValueError:
        return
    command: list[str] = []
    for token in [*tokens, ";"]:
        if token and set(token) <= set(";&|()"):
            args = _after_ccfair(command)
            if args is not None:
                yield args
            command = []
        else:
            command.append(token)


def _after_ccfair(words: list[str]) -> list[str] | None:
    i = 0
    while i < len(words):
        word = words[i]
        if re.fullmatch(r"\w+=.*", word):
            i += 1
        elif word in _WRAPPERS:
            i += 1 + _WRAPPERS[word]
        elif re.fullmatch(r"(.*/)?python(3(\.\d+)?)?", word) and words[i + 1 : i + 3] == [
            "-m",
            "ccfair",
        ]:
            return words[i + 3 :]
        elif word == "ccfair" or word.endswith("/bin/ccfair"):
            return words[i + 1 :]
        else:
            return None
    return None


def cli_errors(args: list[str]) -> list[str]:
    """What is wrong in the arguments of one ``ccfair`` command: an unknown command or an
    option its parser does not know. Placeholders (``COMMAND``, ``<x>``, ``...``) are not
    checked.

    Example:
        >>> cli_errors(["run", "--jsn"])
        ['ccfair run: no option --jsn']
        >>> cli_errors(["rum"])
        ['ccfair: no command rum']
    """
    commands = _commands()
    global_options = {"--debug", "--version", "--help", "-h"}
    words = [a for a in args if a.split("=")[0] not in global_options]
    if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
        return []
    name, rest = words[0], words[1:]
    if name not in commands:
        return [f"ccfair: no command {name}"]
    known = commands[name]._option_string_actions
    errors = []
    for word in rest:
        option = word.split("=")[0]
        if re.fullmatch(r"--[a-z][a-z0-9-]*|-[a-zA-Z]", option) and option not in known:
            errors.append(f"ccfair {name}: no option {option}")
    return errors


def _shell_lines(block: CodeBlock) -> Iterator[tuple[int, str]]:
    """The command lines of a code block with their offsets: every line of a shell block,
    the ``$ ``-prompted lines of others; continuation lines (``\\``) joined."""
    shell = block.lang in ("bash", "sh", "shell", "zsh")
    pending: tuple[int, str] | None = None
    for offset, line in enumerate(block.lines):
        if pending is not None:
            start, text = pending
            text = f"{text} {line.strip()}"
        else:
            m = re.match(r"\s*\$ (.*)", line)
            following = block.lines[offset + 1] if offset + 1 < len(block.lines) else ""
            if m and following.startswith("error:"):
                continue  # an example of a wrong command and its error
            if m:
                start, text = offset, m.group(1)
            elif shell:
                start, text = offset, line
            else:
                continue
        if text.rstrip().endswith("\\"):
            pending = (start, text.rstrip()[:-1])
            continue
        pending = None
        yield start, text


def check_cli(md: Markdown) -> list[Problem]:
    """``ccfair COMMAND --option`` in code blocks and inline code uses a command and options
    the parser knows.

    Example: ``ccfair sweep grid.toml --worker 2`` gives
    ``FILE:LINE: ccfair sweep: no option --worker``.
    """
    problems = []
    for block in md.blocks:
        if block.lang in ("python", "py", "pycon", "toml", "json", "rust", "yaml"):
            continue
        for offset, line in _shell_lines(block):
            for args in ccfair_commands(line):
                for error in cli_errors(args):
                    problems.append(Problem(md.path, block.line + offset, error))
    for number, code in md.inline_code():
        commands = list(ccfair_commands(code)) or _bare_command(code)
        for args in commands:
            for error in cli_errors(args):
                problems.append(Problem(md.path, number, error))
    return problems


def _bare_command(code: str) -> list[list[str]]:
    """Inline code that names a ccfair command without ``ccfair`` and gives it an option
    (`` `reproduce --dry-run` ``, `` `run --trace flow9` ``): that command's arguments.

    Example:
        >>> _bare_command("sweep --dry-run"), _bare_command("sweep the grid")
        ([['sweep', '--dry-run']], [])
    """
    try:
        words = shlex.split(code)
    except ValueError:
        return []
    if len(words) > 1 and words[0] in _commands() and any(w.startswith("-") for w in words):
        return [words]
    return []


RULES = (check_links, check_images, check_python_names, check_inline_names, check_cli)


def markdown_files(paths: Sequence[Path]) -> list[Path]:
    """The Markdown files among ``paths`` and under those that are directories."""
    files = []
    for path in paths:
        files.extend(sorted(path.rglob("*.md")) if path.is_dir() else [path])
    return files


def check(paths: Sequence[Path]) -> list[Problem]:
    """Every problem of every rule in the Markdown files at ``paths``."""
    problems = []
    for path in markdown_files(paths):
        md = read_markdown(path)
        for rule in RULES:
            problems.extend(rule(md))
    return sorted(problems, key=lambda p: (str(p.path), p.line, p.message))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="Markdown files or directories")
    args = parser.parse_args(argv)
    paths = args.paths or [_shown(ROOT / p) for p in DEFAULT_PATHS]
    for path in paths:
        if not path.exists():
            print(f"error: {path}: no such file or directory", file=sys.stderr)
            return 2
    problems = check(paths)
    for problem in problems:
        print(problem)
    return 1 if problems else 0


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it is under it."""
    try:
        return path.relative_to(Path.cwd())
    except ValueError:
        return path


if __name__ == "__main__":
    sys.exit(main())
