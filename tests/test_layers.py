"""The package's layers, read from the source with ``ast`` (no import is executed).

- ``agc._core`` is the foundation: it imports no feature and not the CLI;
- a feature (every other subpackage of ``agc`` but ``cli``) imports only itself,
  ``agc._core``, ``agc.errors`` and ``agc.exitcodes``: features never import each other;
- nothing outside ``agc.cli`` imports ``agc.cli``, typer or rich.

Tests import front doors: a feature's package (``agc.ledger``), ``agc._core`` (for
foundation unit tests), ``agc.errors``, ``agc.exitcodes``. A test module that must reach
inside a feature (``agc.ledger._sanitize``) names each such module in a module-level
``REACHES_INSIDE = {"agc.ledger._sanitize": "why", ...}`` mapping, each with a reason;
a declared package covers its submodules.
"""

from __future__ import annotations

import ast
import fnmatch
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
TESTS = Path(__file__).resolve().parent
PACKAGE = SRC / "agc"
SHARED = {"agc", "agc.errors", "agc.exitcodes"}
CLI_ONLY = ("typer", "rich", "click")


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
            found.append((node.lineno, base))
            # `from agc import integrity` names a subpackage, not an attribute.
            found.extend((node.lineno, f"{base}.{alias.name}") for alias in node.names)
    return found


def _layer(module: str) -> str:
    """``agc.integrity._verify`` -> ``agc.integrity``; top-level modules are their own."""
    return ".".join(module.split(".")[:2])


def _violation(importer: str, imported: str) -> str | None:
    top = imported.split(".", maxsplit=1)[0]
    mine = _layer(importer)
    if top in CLI_ONLY and mine != "agc.cli":
        return f"only agc.cli imports {top}"
    if top != "agc":
        return None
    theirs = _layer(imported)
    if theirs in SHARED or theirs == mine:
        return None
    if theirs == "agc.cli":
        return "nothing outside agc.cli imports it"
    if mine == "agc.cli" or mine == "agc" or mine == "agc.demo":
        return None  # the edge composes features
    if theirs == "agc._core":
        return None if mine not in SHARED else f"{mine} is below the foundation"
    if mine == "agc._core":
        return "the foundation imports no feature"
    return "features never import each other"


def _all_sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_the_walk_sees_every_package() -> None:
    layers = {_layer(_module_name(path)) for path in _all_sources()}
    assert {
        "agc._core",
        "agc.integrity",
        "agc.resume",
        "agc.ledger",
        "agc.extensions",
        "agc.cli",
    } <= layers


@pytest.mark.parametrize("path", _all_sources(), ids=lambda p: str(p.relative_to(SRC)))
def test_module_respects_the_layers(path: Path) -> None:
    importer = _module_name(path)
    bad = [
        f"line {line}: imports {name} ({why})"
        for line, name in _imports(path)
        if (why := _violation(importer, name)) is not None
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
        ("agc.cli.app", "agc.integrity", True),
        ("agc.integrity._writer", "agc.cli.common", False),
        ("agc.errors", "agc._core.fs", False),
    ],
)
def test_the_rule_itself(importer: str, imported: str, allowed: bool) -> None:
    assert (_violation(importer, imported) is None) is allowed


# Test modules not yet converted to front doors (being rewritten alongside the store
# work): a shrinking list, each pattern failing once nothing it matches needs it.
_NOT_YET_DECLARED: tuple[str, ...] = (
    "integrity/*",
    "resume/test_snapshot*.py",
)


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


def _not_yet_declared(path: Path) -> str | None:
    relative = path.relative_to(TESTS).as_posix()
    return next((p for p in _NOT_YET_DECLARED if fnmatch.fnmatch(relative, p)), None)


@pytest.mark.parametrize("path", _test_sources(), ids=lambda p: str(p.relative_to(TESTS)))
def test_tests_reach_inside_a_feature_only_where_declared(path: Path) -> None:
    problems = _reach_problems(_parse(path), _features())
    if _not_yet_declared(path) is not None and problems:
        pytest.skip(f"not yet converted to front doors: {len(problems)} problem(s)")
    assert not problems, f"{path.relative_to(TESTS)}: " + "; ".join(problems)


@pytest.mark.parametrize("pattern", _NOT_YET_DECLARED)
def test_the_not_yet_declared_list_only_shrinks(pattern: str) -> None:
    features = _features()
    matched = [
        path
        for path in _test_sources()
        if fnmatch.fnmatch(path.relative_to(TESTS).as_posix(), pattern)
    ]
    assert any(_reach_problems(_parse(path), features) for path in matched), (
        f"{pattern}: every test module it matches imports front doors or declares what "
        "it reaches inside: remove it from _NOT_YET_DECLARED"
    )


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
