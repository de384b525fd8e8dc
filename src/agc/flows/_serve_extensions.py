"""Extensions for ``agc serve``: the enabled items of an extension store, projected into
an isolated Codex home, as the :class:`agc.serve.AgentExtensions` new sessions get.

:class:`ServeExtensions` is the supervisor's extensions source. Each call looks at the
extension index and the base configuration (the served Codex home's ``config.toml``);
when either changed since the last projection, it projects again with
:func:`agc.extensions.project` (a sealed projection record each time) into its own
Codex home and returns the new extensions, whose ``fingerprint`` covers the
projection's (the enabled set) and the ``config.toml`` written (the base included).
With no enabled item it returns ``None``: sessions run in the served Codex home as
without extensions. Sessions get ``-c mcp_optional_startup_grace_ms=<grace>`` (the
value the projected ``config.toml`` holds) and wait for the projected MCP servers'
startup before their first turn.
"""

from __future__ import annotations

import hashlib
import threading
import tomllib
from pathlib import Path
from typing import Any, Final

from agc.errors import InputError
from agc.extensions import DEFAULT_STARTUP_GRACE_MS, ExtensionRepository, project
from agc.serve import AgentExtensions

__all__ = ["DEFAULT_MCP_STARTUP_WAIT_MS", "ServeExtensions"]

DEFAULT_MCP_STARTUP_WAIT_MS: Final = 120_000
"""How long a new session waits for the projected MCP servers before its first turn."""
_MAX_BASE_CONFIG_BYTES: Final = 4 * 1024 * 1024


class ServeExtensions:
    """The enabled extensions of a store, projected on change (see the module docstring).

    Args:
        store: the store holding the extension repository (``<store>/extensions``).
        codex_home: the isolated Codex home projected into (created if absent; agc
            refuses one whose ``config.toml`` it did not write).
        base_config: the ``config.toml`` the projection builds on (model provider,
            servers of the served Codex home, which win over imported ones); absent: none.
        startup_grace_ms: ``mcp_optional_startup_grace_ms`` for Codex, in ms.
        mcp_startup_wait_ms: the longest wait for the MCP servers at a session start.

    Thread-safe (calls are serialised).

    Raises (from a call): the errors of :func:`agc.extensions.project`
    (``ProjectionRefusedError``, ``StoreError``, ``ExtensionIndexInvalidError``) and
    ``InputError`` for a base configuration that is not TOML.
    """

    def __init__(
        self,
        store: Path | None,
        *,
        codex_home: Path,
        base_config: Path | None,
        startup_grace_ms: int = DEFAULT_STARTUP_GRACE_MS,
        mcp_startup_wait_ms: int = DEFAULT_MCP_STARTUP_WAIT_MS,
    ) -> None:
        self.repo = ExtensionRepository(store)
        self.codex_home = codex_home
        self.base_config = base_config
        self.startup_grace_ms = startup_grace_ms
        self.mcp_startup_wait_ms = mcp_startup_wait_ms
        self._lock = threading.Lock()
        self._seen: str | None = None
        self._current: AgentExtensions | None = None

    def _state(self) -> tuple[str, bytes | None]:
        """A digest of the index and the base configuration, and the latter's bytes."""
        digest = hashlib.sha256()
        for path in (self.repo.index_path, self.base_config):
            data = None
            if path is not None:
                try:
                    data = path.read_bytes()
                except FileNotFoundError:
                    data = None
            digest.update(b"-" if data is None else b"+%d:" % len(data) + data)
            base = data
        return digest.hexdigest(), base

    def __call__(self) -> AgentExtensions | None:
        """The current extensions (projected again if the store or base changed)."""
        with self._lock:
            state, base_bytes = self._state()
            if state == self._seen:
                return self._current
            if not any(item.enabled for item in self.repo.items()):
                self._seen, self._current = state, None
                return None
            base = _parse_base(self.base_config, base_bytes)
            result = project(
                self.repo,
                self.codex_home,
                base_config=base,
                startup_grace_ms=self.startup_grace_ms,
            )
            written = hashlib.sha256(result.fingerprint.encode("utf-8") + b"\n")
            written.update(result.config_toml.read_bytes())
            self._current = AgentExtensions(
                fingerprint=f"sha256:{written.hexdigest()}",
                codex_home=self.codex_home.absolute(),
                skill_roots=(result.skill_root,) if result.skills else (),
                mcp_servers=tuple(server.name for server in result.mcp_servers),
                codex_args=("-c", f"mcp_optional_startup_grace_ms={self.startup_grace_ms}"),
                mcp_startup_wait_ms=self.mcp_startup_wait_ms,
            )
            # The projection rewrote the index (its last projection): seen after it.
            self._seen = self._state()[0]
            return self._current


def _parse_base(path: Path | None, data: bytes | None) -> dict[str, Any] | None:
    if path is None or data is None:
        return None
    if len(data) > _MAX_BASE_CONFIG_BYTES:
        raise InputError(f"{path} is larger than {_MAX_BASE_CONFIG_BYTES} bytes")
    try:
        return tomllib.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(
            f"{path} is not a TOML configuration: {exc}",
            hint="Fix the served Codex home's config.toml (it is the projection's base).",
        ) from exc
