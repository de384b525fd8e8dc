"""Preflight: can a Codex stdio session start here? Each failure is a named blocker.

Checked before a session starts and answered by ``GET /readyz``:

* ``codex_cli_binary_missing``: the executable is not found (a path, or a name on
  ``PATH``);
* ``codex_cli_not_executable``: it is not a regular executable file, or ``--version``
  fails;
* ``codex_cli_native_dependency_missing``: it cannot be loaded (its loader or a shared
  library is missing);
* ``workspace_mount_missing`` / ``workspace_write_boundary_blocked``: the workspace
  folder does not exist / is not a folder the service can create a file in;
* ``codex_home_missing`` / ``codex_home_write_blocked``: the same for ``CODEX_HOME``;
* ``stdio_protocol_not_wired``: the stdio handshake fails (app-server ``initialize``;
  MCP ``initialize`` + ``tools/list`` naming ``codex`` and ``codex-reply``);
* ``provider_token_boundary``: an env var the provider needs is not set;
* ``runner_lifecycle_missing``: the session supervisor is not running (stopping).

A missing provider credential makes the answer ``status: "failed"`` with
``error.code: "provider_unavailable"`` and ``error.missingEnv`` (the names only; a value
is never read beyond "set and not empty"). The cheap checks (files, folders, env names)
run every time; the deep ones (``codex --version`` and the handshake, which start a
process) are cached for ``preflight_ttl_ms`` after a pass.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from agc._core.redact import redact_text
from agc.serve._config import ServeConfig
from agc.serve._provider import ProtocolName, ProviderError

__all__ = [
    "BLOCKER_CODES",
    "Blocker",
    "DeepCheck",
    "Preflight",
    "PreflightReport",
    "check_folder",
    "missing_env",
    "resolve_binary",
]

BLOCKER_CODES: Final = (
    "codex_cli_binary_missing",
    "codex_cli_not_executable",
    "codex_cli_native_dependency_missing",
    "runner_lifecycle_missing",
    "stdio_protocol_not_wired",
    "workspace_mount_missing",
    "workspace_write_boundary_blocked",
    "codex_home_missing",
    "codex_home_write_blocked",
    "provider_token_boundary",
)

_LOADER_FAILURE: Final = "error while loading shared libraries"


@dataclass(frozen=True)
class Blocker:
    """One reason a session cannot start: a ``code`` from :data:`BLOCKER_CODES` (or
    another snake_case code a composed check adds) and a sentence without secrets."""

    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


@dataclass(frozen=True)
class DeepCheck:
    """The result of the checks that start a process (cached)."""

    at_ms: int
    blockers: tuple[Blocker, ...]
    version: str | None
    protocol: ProtocolName | None

    @property
    def passed(self) -> bool:
        return not self.blockers


@dataclass(frozen=True)
class PreflightReport:
    """What the preflight found (``to_dict`` is the ``/readyz`` answer).

    Attributes:
        blockers: every blocker, cheap checks first.
        missing_env: provider env var names that are not set.
        version: ``codex --version`` output (first line, redacted), when it ran.
        protocol: the stdio protocol whose handshake answered, when one did.
        deep_at_ms: when the deep checks last ran (``None``: not run).
        checked_at_ms: when this report was made.
    """

    blockers: tuple[Blocker, ...]
    missing_env: tuple[str, ...]
    version: str | None
    protocol: ProtocolName | None
    deep_at_ms: int | None
    checked_at_ms: int
    binary: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not self.blockers

    def to_dict(self) -> dict[str, Any]:
        """The preflight as JSON: ``status`` ``ready``, or ``failed`` with ``error``."""
        answer: dict[str, Any] = {
            "status": "ready" if self.ready else "failed",
            "provider": "codex-stdio",
            "protocol": self.protocol,
            "backend": None if self.protocol is None else f"codex-{self.protocol}",
            "codexStdioFeasibility": {
                "status": "ready" if self.ready else "blocked",
                "blockers": [blocker.to_dict() for blocker in self.blockers],
                "codexVersion": self.version,
                "binary": self.binary,
                "deepCheckedAtMs": self.deep_at_ms,
            },
            "checkedAtMs": self.checked_at_ms,
        }
        if not self.ready:
            # the most basic missing prerequisite first: the blockers are in that order
            # (the program, the folders, then the provider's key and the rest)
            first = self.blockers[0]
            answer["error"] = {
                "code": "provider_unavailable",
                "message": first.message,
                "missingEnv": list(self.missing_env),
                "blockers": [blocker.code for blocker in self.blockers],
            }
        return answer


def _now_ms() -> int:
    return int(time.time() * 1000)


def resolve_binary(name: str, env: Mapping[str, str]) -> tuple[str | None, Blocker | None]:
    """``(path, None)`` for a usable executable, else ``(path or None, blocker)``.

    A name without a slash is looked up on the agent's ``PATH``; a relative path, given
    or found through a relative ``PATH`` entry (``bin``, ``.``), is made absolute
    against the current folder (where the command was given), since Codex is started in
    the workspace, where the same relative path names another file.
    """
    if os.sep in name or (os.altsep and os.altsep in name):
        path: str | None = os.path.abspath(name)
    else:
        path = shutil.which(name, path=env.get("PATH", ""))
        if path is not None:
            path = os.path.abspath(path)
        if path is None:
            # which() skips non-executable files: say so when one is there.
            for folder in env.get("PATH", "").split(os.pathsep):
                candidate = Path(folder or ".") / name
                if candidate.is_file():
                    return str(candidate), Blocker(
                        "codex_cli_not_executable", f"{name} on PATH is not executable"
                    )
            return None, Blocker("codex_cli_binary_missing", f"{name} was not found on PATH")
    assert path is not None
    shown = os.path.basename(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return path, Blocker("codex_cli_binary_missing", f"{shown} does not exist")
    except OSError as exc:
        return path, Blocker("codex_cli_not_executable", f"{shown} cannot be read ({exc.strerror})")
    if not stat.S_ISREG(info.st_mode):
        return path, Blocker("codex_cli_not_executable", f"{shown} is not a regular file")
    if not os.access(path, os.X_OK):
        return path, Blocker("codex_cli_not_executable", f"{shown} is not executable")
    return path, None


def check_folder(path: Path, *, missing: str, blocked: str, what: str) -> Blocker | None:
    """A blocker when ``path`` is missing, or is not a folder a file can be created in
    (tried: a temporary file is made and removed)."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return Blocker(missing, f"the {what} does not exist")
    except OSError as exc:
        return Blocker(blocked, f"the {what} cannot be read ({exc.strerror})")
    if not stat.S_ISDIR(info.st_mode):
        return Blocker(blocked, f"the {what} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(prefix=".agc-serve-probe-", dir=path)
    except OSError as exc:
        return Blocker(blocked, f"the {what} is not writable ({exc.strerror})")
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)
    return None


def missing_env(names: Sequence[str], env: Mapping[str, str]) -> tuple[str, ...]:
    """The names in ``names`` that are unset or empty in ``env`` (values never kept)."""
    return tuple(name for name in names if not env.get(name))


async def _version(
    binary: str, env: Mapping[str, str], cwd: Path, timeout_s: float
) -> tuple[str | None, Blocker | None]:
    shown = os.path.basename(binary)
    try:
        process = await asyncio.create_subprocess_exec(
            binary,
            "--version",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
            start_new_session=True,
        )
    except OSError as exc:
        from agc.serve._stdio import spawn_error  # noqa: PLC0415 - one shared mapping

        error = spawn_error(exc, binary)
        return None, Blocker(error.code, error.message)
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout=timeout_s)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, 9)
        await process.wait()
        return None, Blocker(
            "codex_cli_not_executable", f"{shown} --version did not end in {timeout_s:g} s"
        )
    if process.returncode != 0:
        text = err.decode("utf-8", errors="replace").lower()
        if process.returncode == 127 or _LOADER_FAILURE in text:
            return None, Blocker(
                "codex_cli_native_dependency_missing",
                f"{shown} --version failed to load (exit {process.returncode})",
            )
        return None, Blocker(
            "codex_cli_not_executable", f"{shown} --version exited {process.returncode}"
        )
    first = out.decode("utf-8", errors="replace").strip().splitlines()
    return (redact_text(first[0])[:120] if first else None), None


class Preflight:
    """Runs and caches the preflight (see the module docstring).

    Args:
        config: the service settings.
        handshake: ``await handshake(protocol)`` starts a session of that protocol and
            closes it; raises :class:`ProviderError` when it fails.
        extra_checks: more checks composed in by the caller (an audit store that must
            be writable); each returns a :class:`Blocker` or ``None``.
        lifecycle: returns ``False`` when the supervisor no longer runs.
    """

    def __init__(
        self,
        config: ServeConfig,
        *,
        handshake: Callable[[ProtocolName], Any],
        extra_checks: Sequence[Callable[[], Blocker | None]] = (),
        lifecycle: Callable[[], bool] = lambda: True,
    ) -> None:
        self.config = config
        self._handshake = handshake
        self._extra = list(extra_checks)
        self._lifecycle = lifecycle
        self._deep: DeepCheck | None = None
        self._deep_key: tuple[str, float] | None = None
        self._lock = asyncio.Lock()

    @property
    def protocol(self) -> ProtocolName | None:
        """The protocol the last passed deep check chose."""
        return self._deep.protocol if self._deep is not None and self._deep.passed else None

    def invalidate(self) -> None:
        """Forget the cached deep check (a session handshake just failed)."""
        self._deep = None

    def confirm(self, protocol: ProtocolName, version: str | None = None) -> None:
        """A session just completed its handshake: the deep check holds for a while."""
        previous = self._deep
        self._deep = DeepCheck(
            _now_ms(),
            (),
            version if version is not None else (previous.version if previous else None),
            protocol,
        )

    async def run(self, *, deep: bool = True) -> PreflightReport:
        """The report now. ``deep``: run (or reuse) the deep checks when the cheap ones
        pass; ``False`` reports only the cheap ones plus what is cached."""
        config = self.config
        env = config.agent_env()
        blockers: list[Blocker] = []
        binary, problem = resolve_binary(config.codex_bin, env)
        if problem is not None:
            blockers.append(problem)
        for blocker in (
            check_folder(
                config.workspace,
                missing="workspace_mount_missing",
                blocked="workspace_write_boundary_blocked",
                what="workspace",
            ),
            check_folder(
                config.codex_home,
                missing="codex_home_missing",
                blocked="codex_home_write_blocked",
                what="CODEX_HOME folder",
            ),
        ):
            if blocker is not None:
                blockers.append(blocker)
        missing = missing_env(config.provider_key_env, env)
        if missing:
            blockers.append(
                Blocker(
                    "provider_token_boundary",
                    "the model provider's API key is not set in agc serve's environment: "
                    + ", ".join(missing),
                )
            )
        if not self._lifecycle():
            blockers.append(
                Blocker("runner_lifecycle_missing", "the session supervisor is stopping")
            )
        for check in self._extra:
            extra = check()
            if extra is not None:
                blockers.append(extra)
        deep_result: DeepCheck | None = self._deep
        binary_ok = binary is not None and problem is None
        home_ok = not any(b.code.startswith(("codex_home", "workspace")) for b in blockers)
        if deep and binary_ok and home_ok:
            assert binary is not None
            deep_result = await self._deep_check(binary, env)
        if deep_result is not None and binary_ok:
            blockers.extend(deep_result.blockers)
        return PreflightReport(
            blockers=tuple(blockers),
            missing_env=missing,
            version=deep_result.version if deep_result else None,
            protocol=deep_result.protocol if deep_result and deep_result.passed else None,
            deep_at_ms=deep_result.at_ms if deep_result else None,
            checked_at_ms=_now_ms(),
            binary=None if binary is None else os.path.basename(binary),
        )

    async def _deep_check(self, binary: str, env: Mapping[str, str]) -> DeepCheck:
        try:
            key = (binary, os.stat(binary).st_mtime)
        except OSError:
            key = (binary, 0.0)
        async with self._lock:
            cached = self._deep
            fresh = cached is not None and _now_ms() - cached.at_ms < self.config.preflight_ttl_ms
            if cached is not None and cached.passed and fresh and self._deep_key == key:
                return cached
            result = await self._run_deep(binary, env)
            self._deep, self._deep_key = result, key
            return result

    async def _run_deep(self, binary: str, env: Mapping[str, str]) -> DeepCheck:
        timeout_s = self.config.handshake_timeout_ms / 1000
        version, problem = await _version(binary, env, self.config.workspace, timeout_s)
        if problem is not None:
            return DeepCheck(_now_ms(), (problem,), version, None)
        choice = self.config.protocol
        protocols: tuple[ProtocolName, ...] = (
            ("app-server", "mcp-server") if choice == "auto" else (choice,)
        )
        failures: list[str] = []
        for protocol in protocols:
            try:
                await self._handshake(protocol)
            except ProviderError as exc:
                failures.append(f"{protocol}: {exc.message}")
                continue
            return DeepCheck(_now_ms(), (), version, protocol)
        return DeepCheck(
            _now_ms(),
            (Blocker("stdio_protocol_not_wired", "; ".join(failures)[:600]),),
            version,
            None,
        )
