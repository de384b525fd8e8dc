"""The project's ``.agent/agent.db``: a SQLite file of typed records (seed 000 §5.5).

One table, created if absent::

    agent_records(id INTEGER PRIMARY KEY AUTOINCREMENT, record_type TEXT NOT NULL,
                  record_key TEXT, body TEXT NOT NULL, updated_at INTEGER NOT NULL,
                  schema_version INTEGER NOT NULL)

Records are only appended (§4 "Ordinary"): each ``turn_end`` adds one
``direct.codex.turn`` row, and readers take the last row of a ``clientTurnId``. The JSON
body carries ``updatedAt`` (Unix ms) and ``schemaVersion`` too, and is at most 1 MiB.
"""

from __future__ import annotations

import json
import sqlite3
import stat
from collections.abc import Mapping
from contextlib import closing
from pathlib import Path
from typing import Any, Final

from agc._core import json as strict_json
from agc.errors import AgentDbError, JsonInvalidError
from agc.ledger._contract import DB_RECORD_SCHEMA_VERSION, MAX_DB_RECORD_BYTES

__all__ = ["AgentDb"]

_COLUMNS: Final = ("id", "record_type", "record_key", "body", "updated_at", "schema_version")
_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS agent_records (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    record_type TEXT NOT NULL,
    record_key TEXT,
    body TEXT NOT NULL,
    updated_at INTEGER NOT NULL,
    schema_version INTEGER NOT NULL
);
"""
_INDEX: Final = (
    "CREATE INDEX IF NOT EXISTS agent_records_by_key ON agent_records (record_type, record_key, id)"
)


class AgentDb:
    """Append and read typed records in one ``agent.db`` file.

    Args:
        path: the database file (created with its table when absent).
    """

    def __init__(self, path: Path) -> None:
        self.path = path

    def _connect(self) -> sqlite3.Connection:
        try:
            info = self.path.lstat()
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise AgentDbError(f"cannot read {self.path}: {exc.strerror}") from exc
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise AgentDbError(f"{self.path} is a symlink or not a regular file; not opened")
        conn: sqlite3.Connection | None = None
        try:
            conn = sqlite3.connect(self.path, timeout=5.0)
            conn.executescript(_SCHEMA)
            columns = tuple(row[1] for row in conn.execute("PRAGMA table_info(agent_records)"))
            if columns != _COLUMNS:
                conn.close()
                raise AgentDbError(
                    f"{self.path} has an agent_records table of another shape: {list(columns)}"
                )
            conn.execute(_INDEX)
        except sqlite3.Error as exc:
            if conn is not None:
                conn.close()
            raise AgentDbError(f"{self.path} cannot be used as agent.db: {exc}") from exc
        return conn

    def append(
        self, record: Mapping[str, Any], *, key: str | None, updated_at_ms: int
    ) -> dict[str, Any]:
        """Append ``record`` (which has a ``recordType``) and return the stored body.

        Raises:
            AgentDbError: the body is over 1 MiB, the file is not an agc record
                database, or SQLite fails (locked, read-only, disk full).
        """
        record_type = record.get("recordType")
        if not isinstance(record_type, str):
            raise AgentDbError("an agent.db record needs a string recordType")
        body = {**record, "updatedAt": updated_at_ms, "schemaVersion": DB_RECORD_SCHEMA_VERSION}
        text = json.dumps(body, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        size = len(text.encode("utf-8"))
        if size > MAX_DB_RECORD_BYTES:
            raise AgentDbError(
                f"{record_type} record is {size} bytes; agent.db records are at most "
                f"{MAX_DB_RECORD_BYTES} bytes"
            )
        try:
            with closing(self._connect()) as conn, conn:
                conn.execute(
                    "INSERT INTO agent_records "
                    "(record_type, record_key, body, updated_at, schema_version) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (record_type, key, text, updated_at_ms, DB_RECORD_SCHEMA_VERSION),
                )
        except sqlite3.Error as exc:
            raise AgentDbError(f"writing {record_type} to {self.path} failed: {exc}") from exc
        return body

    def last(self, record_type: str, key: str) -> dict[str, Any] | None:
        """The body of the last record of ``record_type`` with ``key``, or ``None``.

        Raises:
            AgentDbError: as :meth:`append`, or a stored body is not JSON.
        """
        if not self.path.exists():
            return None
        try:
            with closing(self._connect()) as conn:
                row = conn.execute(
                    "SELECT body FROM agent_records WHERE record_type = ? AND record_key = ? "
                    "ORDER BY id DESC LIMIT 1",
                    (record_type, key),
                ).fetchone()
        except sqlite3.Error as exc:
            raise AgentDbError(f"reading {self.path} failed: {exc}") from exc
        if row is None:
            return None
        try:
            body = strict_json.loads(row[0])
        except (TypeError, JsonInvalidError) as exc:
            raise AgentDbError(f"{self.path} holds a {record_type} body that is not JSON") from exc
        if not isinstance(body, dict):
            raise AgentDbError(f"{self.path} holds a {record_type} body that is not an object")
        return body
