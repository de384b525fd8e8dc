"""Fixtures for the ledger tests: a project folder with an offered GDD."""

from __future__ import annotations

from pathlib import Path

import pytest

GDD_TEXT = "# Fast GDD\nA bullet-hell shooter, not a collecting game.\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root holding ``assets/uploads/upload-1-fast_gdd.md``."""
    root = tmp_path / "proj"
    (root / "assets" / "uploads").mkdir(parents=True)
    (root / "assets" / "uploads" / "upload-1-fast_gdd.md").write_text(GDD_TEXT)
    return root
