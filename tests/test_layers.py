"""The package's layers, read from the source with ``ast`` (no import is executed).

- ``agc._core`` is the foundation: it imports no feature and not the CLI;
- a feature (every other subpackage of ``agc`` but ``cli``) imports only itself,
  ``agc._core``, ``agc.errors`` and ``agc.exitcodes``: features never import each other;
- nothing outside ``agc.cli`` imports ``agc.cli``, typer or rich.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
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
