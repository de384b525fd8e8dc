"""Shared fixtures: a temporary store and the real transcripts in ../shared."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
REAL_FIXTURES = SHARED / "fixtures" / "real"
RESUME_CASES = SHARED / "cases" / "resume"


def real_fixture_files() -> list[Path]:
    """Every real transcript under ../shared/fixtures/real/ (empty when absent)."""
    if not REAL_FIXTURES.is_dir():
        return []
    return sorted(REAL_FIXTURES.rglob("*.jsonl"))


def require_shared(path: Path) -> Path:
    """Skip the calling test, with the reason, when ../shared is not beside the repo."""
    if not path.exists():
        pytest.skip(f"{path} is absent: ../shared is not beside this checkout")
    return path


@pytest.fixture
def store(tmp_path: Path) -> Path:
    """An empty store folder."""
    folder = tmp_path / "store"
    folder.mkdir()
    return folder


@pytest.fixture(autouse=True)
def _no_user_store(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never touch ~/.agc: AGC_HOME points into the test's temp folder."""
    monkeypatch.setenv("AGC_HOME", str(tmp_path / "agc-home"))
