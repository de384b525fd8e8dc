"""Tests for agc.ledger._db: the agent.db record table."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from agc.errors import AgentDbError
from agc.ledger import AgentDb


def test_append_creates_the_table_and_last_returns_the_newest(tmp_path: Path) -> None:
    db = AgentDb(tmp_path / "agent.db")
    assert db.last("direct.codex.turn", "k") is None
    db.append({"recordType": "direct.codex.turn", "n": 1}, key="k", updated_at_ms=10)
    db.append({"recordType": "direct.codex.turn", "n": 2}, key="k", updated_at_ms=11)
    db.append({"recordType": "direct.codex.turn", "n": 3}, key="other", updated_at_ms=12)
    last = db.last("direct.codex.turn", "k")
    assert last == {"recordType": "direct.codex.turn", "n": 2, "updatedAt": 11, "schemaVersion": 1}


def test_record_over_1_mib_is_refused(tmp_path: Path) -> None:
    db = AgentDb(tmp_path / "agent.db")
    with pytest.raises(AgentDbError, match="at most 1048576"):
        db.append({"recordType": "t", "x": "y" * (1024 * 1024)}, key=None, updated_at_ms=1)


def test_foreign_table_shape_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE agent_records (id INTEGER, other TEXT)")
    with pytest.raises(AgentDbError, match="another shape"):
        AgentDb(path).append({"recordType": "t"}, key=None, updated_at_ms=1)


def test_symlinked_db_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real.db").write_bytes(b"")
    (tmp_path / "agent.db").symlink_to(tmp_path / "real.db")
    with pytest.raises(AgentDbError, match="symlink"):
        AgentDb(tmp_path / "agent.db").append({"recordType": "t"}, key=None, updated_at_ms=1)


def test_record_without_type_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentDbError, match="recordType"):
        AgentDb(tmp_path / "agent.db").append({}, key=None, updated_at_ms=1)
