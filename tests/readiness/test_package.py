"""``agc.readiness``: one front door, and imports only the foundation (a layer rule)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import agc.readiness

PACKAGE = Path(agc.readiness.__file__).parent
ALLOWED_AGC = ("agc._core", "agc.errors", "agc.exitcodes", "agc.readiness")
FORBIDDEN_THIRD_PARTY = ("typer", "rich", "click")


def _imports(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_readiness_imports_only_the_foundation(path: Path) -> None:
    for name in _imports(path):
        if name == "agc" or name.startswith("agc."):
            assert name.startswith(ALLOWED_AGC), f"{path.name} imports {name}"
        assert name.split(".")[0] not in FORBIDDEN_THIRD_PARTY, f"{path.name} imports {name}"


@pytest.mark.parametrize("name", agc.readiness.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(agc.readiness, name) is not None


def test_all_is_sorted_and_complete() -> None:
    assert len(set(agc.readiness.__all__)) == len(agc.readiness.__all__)
    public = {n for n in vars(agc.readiness) if not n.startswith("_") and n != "annotations"}
    assert set(agc.readiness.__all__) == public
