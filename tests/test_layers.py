"""The package's layers, read from the source with ``ast`` (no import is executed).

- ``agc._core`` is the foundation: it imports no feature, no flow and not the CLI;
- a feature (``agc.integrity``, ``agc.resume``, ``agc.ledger``, ``agc.extensions``,
  ``agc.readiness``, ``agc.serve``) imports only itself, ``agc._core``, ``agc.errors``
  and ``agc.exitcodes``: features never import each other;
- ``agc.flows`` (what combines features) imports features by their front doors only
  (the package, never ``agc.<feature>._x``), plus ``agc._core``, ``agc.errors`` and
  ``agc.exitcodes``;
- ``agc.cli`` imports only ``agc.flows`` and the features' front doors (never
  ``agc._core``, never ``agc.<feature>._x``), ``agc.errors``, ``agc.exitcodes`` and the
  public top-level modules (``agc``, ``agc.demo``);
- nothing outside ``agc.cli`` imports ``agc.cli``, typer or rich;
- no import cycle anywhere in ``src/``.

See docs/architecture.md for why.

Tests import front doors: a feature's package (``agc.ledger``), ``agc._core`` (for
foundation unit tests), ``agc.errors``, ``agc.exitcodes``. A test module that must reach
inside a feature (``agc.ledger._sanitize``) names each such module in a module-level
``REACHES_INSIDE = {"agc.ledger._sanitize": "why", ...}`` mapping, each with a reason;
a declared package covers its submodules.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
TESTS = Path(__file__).resolve().parent
PACKAGE = SRC / "agc"
SHARED = {"agc", "agc.errors", "agc.exitcodes"}
CLI_ONLY = ("typer", "rich", "click")
FEATURES = frozenset(
    {
        "agc.integrity",
        "agc.resume",
        "agc.ledger",
        "agc.extensions",
        "agc.readiness",
        "agc.capture",
        "agc.serve",
    }
)
FLOWS = "agc.flows"
# Public top-level modules the edge may import besides the front doors.
EDGE_PUBLIC = frozenset({"agc", "agc.errors", "agc.exitcodes", "agc.demo"})


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> list[tuple[int, str]]:
    """Every absolute module name ``path`` imports (relative imports resolved)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path).split(".")
    if path.name != "__init__.py":
        package.pop()
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package[: len(package) - node.level + 1], base]).rstrip(".")
            named = [f"{base}.{alias.name}" for alias in node.names]
            # `from agc import integrity` names a subpackage, not an attribute; when every
            # name is a module, the package itself is only their container.
            if not all(name in _source_modules() for name in named):
                found.append((node.lineno, base))
            found.extend((node.lineno, name) for name in named)
    return found


def _all_sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


@functools.cache
def _source_modules() -> frozenset[str]:
    return frozenset(_module_name(path) for path in _all_sources())


MODULES = _source_modules()


def _resolve(name: str, modules: Iterable[str] = MODULES) -> str:
    """The module ``name`` denotes: itself when it is a module of ``src/``, else its
    longest prefix that is one (``agc.integrity.check_run`` -> ``agc.integrity``, an
    attribute of the front door); a name outside agc is returned as it is."""
    known = set(modules)
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        candidate = ".".join(parts[:end])
        if candidate in known:
            return candidate
    return name


def _layer(module: str) -> str:
    """``agc.integrity._verify`` -> ``agc.integrity``; top-level modules are their own."""
    return ".".join(module.split(".")[:2])


def _is_front_door(module: str) -> bool:
    """A feature's or the flows' package itself (its ``__init__``), not a module in it."""
    return module in FEATURES or module == FLOWS


def _violation(importer: str, imported: str) -> str | None:
    """Why ``importer`` may not import ``imported`` (both resolved module names), or
    ``None`` when the layers allow it."""
    top = imported.split(".", maxsplit=1)[0]
    mine = _layer(importer)
    if top in CLI_ONLY and mine != "agc.cli":
        return f"only agc.cli imports {top}"
    if top != "agc":
        return None
    theirs = _layer(imported)
    if theirs == mine:
        return None
    if theirs == "agc.cli":
        return "nothing outside agc.cli imports it"
    if mine == "agc.cli":
        if imported in EDGE_PUBLIC or _is_front_door(imported):
            return None
        if theirs == "agc._core":
            return "agc.cli imports no foundation module: re-export it from agc.flows"
        return "agc.cli imports front doors only (agc.flows, agc.<feature>)"
    if mine == FLOWS:
        if theirs in SHARED or theirs == "agc._core" or imported in FEATURES:
            return None
        return "agc.flows imports feature front doors only"
    if theirs in SHARED:
        return None
    if theirs == FLOWS:
        return "only agc.cli imports agc.flows"
    if mine == "agc" or mine == "agc.demo":
        return None if imported in FEATURES else "the top level imports front doors only"
    if theirs == "agc._core":
        return None if mine not in SHARED else f"{mine} is below the foundation"
    if mine == "agc._core":
        return "the foundation imports no feature"
    return "features never import each other"


def test_the_walk_sees_every_package() -> None:
    layers = {_layer(_module_name(path)) for path in _all_sources()}
    assert {
        "agc._core",
        "agc.integrity",
        "agc.resume",
        "agc.ledger",
        "agc.extensions",
        "agc.flows",
        "agc.cli",
    } <= layers


@pytest.mark.parametrize("path", _all_sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_respects_the_layers(path: Path) -> None:
    importer = _module_name(path)
    bad = [
        f"line {line}: imports {name} ({why})"
        for line, name in _imports(path)
        if (why := _violation(importer, _resolve(name))) is not None
    ]
    assert not bad, f"{importer}: " + "; ".join(bad)


@pytest.mark.parametrize(
    ("importer", "imported", "allowed"),
    [
        ("agc.integrity._verify", "agc.resume._repair", False),
        ("agc.ledger._writer", "agc.integrity", False),
        ("agc._core.fs", "agc.integrity._chain", False),
        ("agc._core.fs", "agc.errors", True),
        ("agc.resume._snapshot", "agc._core.redact", True),
        ("agc.resume._snapshot", "typer", False),
        ("agc.integrity._writer", "agc.cli.common", False),
        ("agc.errors", "agc._core.fs", False),
        # nothing below the flows imports them
        ("agc.integrity._verify", "agc.flows", False),
        ("agc._core.store", "agc.flows", False),
    ],
)
def test_the_rule_itself(importer: str, imported: str, allowed: bool) -> None:
    """The foundation and the features: features never import each other."""
    assert (_violation(importer, imported) is None) is allowed


@pytest.mark.parametrize(
    ("importer", "imported", "allowed"),
    [
        ("agc.cli.app", "agc.integrity", True),
        ("agc.cli.resume", "agc.flows", True),
        ("agc.cli.resume", "agc.errors", True),
        ("agc.cli.evidence", "agc.demo", True),
        ("agc.cli.resume", "agc.cli.common", True),
        ("agc.cli.resume", "typer", True),
        ("agc.cli.resume", "agc.resume._repair", False),
        ("agc.cli.verify", "agc.integrity._verify", False),
        ("agc.cli.common", "agc._core.fs", False),
        ("agc.cli.common", "agc._core", False),
        ("agc.cli.serve", "agc.flows._serve", False),
    ],
)
def test_the_cli_rule_itself(importer: str, imported: str, allowed: bool) -> None:
    """agc.cli imports only agc.flows, front doors, agc.errors/exitcodes (and agc.demo)."""
    assert (_violation(importer, imported) is None) is allowed


@pytest.mark.parametrize(
    ("importer", "imported", "allowed"),
    [
        ("agc.flows._resume", "agc.integrity", True),
        ("agc.flows._resume", "agc.resume", True),
        ("agc.flows._serve", "agc.serve", True),
        ("agc.flows._serve", "agc._core.store", True),
        ("agc.flows._serve", "agc.errors", True),
        ("agc.flows._readiness", "agc", True),
        ("agc.flows._resume", "agc.flows._files", True),
        ("agc.flows._resume", "agc.integrity._kept", False),
        ("agc.flows._resume", "agc.resume._formats.stream", False),
        ("agc.flows._serve", "agc.cli.common", False),
        ("agc.flows._serve", "rich", False),
        ("agc.flows._serve", "agc.demo", False),
    ],
)
def test_the_flows_rule_itself(importer: str, imported: str, allowed: bool) -> None:
    """agc.flows imports feature front doors only (and agc._core, agc.errors/exitcodes)."""
    assert (_violation(importer, imported) is None) is allowed


@pytest.mark.parametrize(
    ("name", "modules", "expected"),
    [
        ("agc.integrity.check_run", {"agc.integrity", "agc.integrity._verify"}, "agc.integrity"),
        (
            "agc.integrity._verify",
            {"agc.integrity", "agc.integrity._verify"},
            "agc.integrity._verify",
        ),
        ("agc.__version__", {"agc"}, "agc"),
        ("typer.core", {"agc"}, "typer.core"),
    ],
)
def test_a_name_resolves_to_the_module_it_denotes(
    name: str, modules: set[str], expected: str
) -> None:
    assert _resolve(name, modules) == expected


# -- cycles ---------------------------------------------------------------------------------


def _graph() -> dict[str, set[str]]:
    """Module -> the modules of ``src/`` it imports (anywhere in its body)."""
    graph: dict[str, set[str]] = {}
    for path in _all_sources():
        importer = _module_name(path)
        targets = {_resolve(name) for _, name in _imports(path)}
        graph[importer] = {target for target in targets if target in MODULES} - {importer}
    return graph


def _cycles(graph: Mapping[str, Iterable[str]]) -> set[frozenset[str]]:
    """The import cycles of ``graph``: its strongly connected components of two or more
    modules (Tarjan's algorithm, iterative), each as the set of its modules."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: set[frozenset[str]] = set()
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(graph.get(target, ()))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.add(frozenset(component))
    return found


def test_no_import_cycle_anywhere_in_src() -> None:
    cycles = sorted(sorted(cycle) for cycle in _cycles(_graph()))
    assert not cycles, f"import cycles: {cycles}"


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": ["b"], "b": ["c"], "c": []}, set()),
        ({"a": ["b"], "b": ["a"]}, {frozenset({"a", "b"})}),
        ({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}, {frozenset({"a", "b", "c"})}),
        (
            {"a": ["b"], "b": ["a"], "c": ["d"], "d": ["c"], "e": ["a", "c"]},
            {frozenset({"a", "b"}), frozenset({"c", "d"})},
        ),
        # two cycles that share a module are one component
        ({"a": ["b"], "b": ["a", "c"], "c": ["b"]}, {frozenset({"a", "b", "c"})}),
        ({"a": ["b"], "b": ["c"], "c": ["d"], "d": ["b"]}, {frozenset({"b", "c", "d"})}),
        ({"a": []}, set()),
    ],
)
def test_the_cycle_rule_itself(graph: dict[str, list[str]], expected: set[frozenset[str]]) -> None:
    assert _cycles(graph) == expected


def _features() -> frozenset[str]:
    """``agc.integrity``, ``agc.ledger`` …: every subpackage but the foundation and the CLI."""
    return frozenset(
        f"agc.{path.parent.name}"
        for path in PACKAGE.glob("*/__init__.py")
        if path.parent.name not in ("_core", "cli")
    )


def _private_feature_module(name: str, features: frozenset[str]) -> bool:
    """``agc.ledger._check`` or ``agc.ledger._events.item``: inside a feature."""
    parts = name.split(".")
    return (
        len(parts) > 2
        and ".".join(parts[:2]) in features
        and any(part.startswith("_") for part in parts[2:])
    )


def _test_imports(tree: ast.Module, features: frozenset[str]) -> list[tuple[int, str]]:
    """Every private feature module a test module imports (at any depth), with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            # `from agc.ledger import _check` names a private module too.
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            if _private_feature_module(node.module, features):
                names = [node.module]
        else:
            continue
        found.extend(
            (node.lineno, name) for name in names if _private_feature_module(name, features)
        )
    return found


def _declared(tree: ast.Module) -> tuple[dict[str, object], list[str]]:
    """The module-level ``REACHES_INSIDE`` mapping, and what is wrong with its form."""
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value_node = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value_node = node.target, node.value
        else:
            continue
        if not (isinstance(target, ast.Name) and target.id == "REACHES_INSIDE"):
            continue
        try:
            value = ast.literal_eval(value_node)
        except ValueError:
            value = None
        if not isinstance(value, dict):
            return {}, ["REACHES_INSIDE is not a literal mapping"]
        return value, []
    return {}, []


def _test_sources() -> list[Path]:
    return sorted(TESTS.rglob("*.py"))


def _parse(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _reach_problems(tree: ast.Module, features: frozenset[str]) -> list[str]:
    """What breaks the rule in a test module: an undeclared private import, a declared
    module without a reason, not private, or not imported."""
    declared, problems = _declared(tree)
    for module, reason in declared.items():
        if not isinstance(module, str) or not _private_feature_module(module, features):
            problems.append(f"REACHES_INSIDE names {module!r}, not a private feature module")
        elif not isinstance(reason, str) or not reason.strip():
            problems.append(f"REACHES_INSIDE gives no reason for {module}")
    used: set[str] = set()
    for line, name in _test_imports(tree, features):
        covering = [m for m in declared if isinstance(m, str) and (name + ".").startswith(m + ".")]
        if covering:
            used.update(covering)
        else:
            problems.append(
                f"line {line}: imports {name} (import the front door, or declare it in "
                "REACHES_INSIDE with the reason the test reaches inside)"
            )
    problems.extend(
        f"REACHES_INSIDE declares {module}, which it does not import"
        for module in declared
        if isinstance(module, str) and module not in used
    )
    return problems


@pytest.mark.parametrize("path", _test_sources(), ids=lambda p: str(p.relative_to(TESTS)))
def test_tests_reach_inside_a_feature_only_where_declared(path: Path) -> None:
    problems = _reach_problems(_parse(path), _features())
    assert not problems, f"{path.relative_to(TESTS)}: " + "; ".join(problems)


def test_the_reach_rule_itself() -> None:
    features = _features()
    source = (
        'REACHES_INSIDE = {"agc.ledger._events": "decoders one by one", "agc.serve._x": ""}\n'
        "from agc.ledger import check_turn_file\n"
        "from agc.ledger._events.item import shell_script\n"
        "from agc.resume import _repair\n"
        "from agc._core.digest import digest_bytes\n"
        "def f():\n"
        "    import agc.integrity._chain\n"
    )
    tree = ast.parse(source)
    assert [name for _, name in _test_imports(tree, features)] == [
        "agc.ledger._events.item",
        "agc.resume._repair",
        "agc.integrity._chain",
    ]
    assert _declared(tree)[0] == {"agc.ledger._events": "decoders one by one", "agc.serve._x": ""}
    assert _reach_problems(tree, features) == [
        "REACHES_INSIDE gives no reason for agc.serve._x",
        "line 4: imports agc.resume._repair (import the front door, or declare it in "
        "REACHES_INSIDE with the reason the test reaches inside)",
        "line 7: imports agc.integrity._chain (import the front door, or declare it in "
        "REACHES_INSIDE with the reason the test reaches inside)",
        "REACHES_INSIDE declares agc.serve._x, which it does not import",
    ]
    assert _reach_problems(ast.parse("import agc.ledger._check\n"), features) == [
        "line 1: imports agc.ledger._check (import the front door, or declare it in "
        "REACHES_INSIDE with the reason the test reaches inside)"
    ]
    assert _reach_problems(ast.parse("REACHES_INSIDE = {'agc.ledger': 'x'}\n"), features) == [
        "REACHES_INSIDE names 'agc.ledger', not a private feature module",
        "REACHES_INSIDE declares agc.ledger, which it does not import",
    ]
    assert _private_feature_module("agc.ledger._check", features)
    assert not _private_feature_module("agc.ledger", features)
    assert not _private_feature_module("agc._core.signing", features)
    assert not _private_feature_module("agc.cli._process", features)
