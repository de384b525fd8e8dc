"""The pinned real agent clients, installed from the npm registry into a cache folder.

``PINNED`` is the one place the client versions are named. :func:`ensure_client`
installs a client once into ``<repo>/.cache/e2e/`` (or ``$AGC_E2E_CACHE``): the npm
package ships the native binary in a platform package, which is what is returned and run
(no Node.js at run time; the Gemini CLI is one bundled Node.js script, run by the
``node`` on ``PATH``). Installing is

* idempotent: a finished install has a ``.installed`` marker and is returned at once,
  with no call to npm (so a warm cache works offline);
* safe against concurrent installs: an exclusive ``flock`` per client, and npm writes
  into a temporary folder that is renamed into place only when the binary is there;
* honest about failure: :class:`ClientUnavailableError` says whether node/npm are missing
  (the tests skip) or npm failed (the tests fail with npm's output).

It also builds the clients' throwaway homes: :func:`codex_home`, :func:`claude_home` and
:func:`gemini_home` write a configuration that points the client at the scripted model
server with update checks, analytics and other outside calls off, and :func:`codex_env` /
:func:`claude_env` / :func:`gemini_env` give the environment to run them in (proxy
pointed at the server, see :func:`tests.e2e.model_server.proxy_env`).
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from tests.e2e.model_server import ModelServer, proxy_env

__all__ = [
    "CACHE_DIR",
    "PINNED",
    "ClientName",
    "ClientUnavailableError",
    "claude_env",
    "claude_home",
    "codex_env",
    "codex_home",
    "ensure_client",
    "gemini_env",
    "gemini_home",
    "node_tools",
]

ClientName = Literal["codex", "claude", "gemini"]

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
CACHE_DIR: Final = Path(os.environ.get("AGC_E2E_CACHE") or REPO_ROOT / ".cache" / "e2e")

API_KEY: Final = "agc-e2e-dummy-key"  # the server accepts any key; this one is never real
MODEL_PROVIDER: Final = "agc-e2e"


@dataclass(frozen=True)
class Pin:
    """One pinned npm package and where its native binary lies inside the install."""

    package: str
    version: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


#: The client versions the end-to-end suite runs (and docs/e2e.md names).
PINNED: Final[Mapping[ClientName, Pin]] = {
    "codex": Pin("@openai/codex", "0.171.0"),
    "claude": Pin("@anthropic-ai/claude-code", "2.1.332"),
    "gemini": Pin("@google/gemini-cli", "0.61.0"),
}

_INSTALL_TIMEOUT: Final = 900  # seconds; two ~100 MB tarballs on a slow link


class ClientUnavailableError(RuntimeError):
    """A client could not be installed. ``missing_tools`` is true when node/npm are absent."""

    def __init__(self, message: str, *, missing_tools: bool = False) -> None:
        super().__init__(message)
        self.missing_tools = missing_tools


def node_tools() -> tuple[str, str] | None:
    """(node, npm) on PATH, or None when either is absent."""
    node, npm = shutil.which("node"), shutil.which("npm")
    return (node, npm) if node and npm else None


def _machine() -> str:
    machine = platform.machine().lower()
    if machine in {"x86_64", "amd64"}:
        return "x64"
    if machine in {"aarch64", "arm64"}:
        return "arm64"
    raise ClientUnavailableError(f"no pinned client binaries for this machine ({machine})")


def _is_musl() -> bool:
    return not platform.libc_ver()[0] and sys.platform == "linux"


def _binary_in(install: Path, name: ClientName) -> Path:
    """Where the platform package puts the native binary (as the packages' launchers say)."""
    modules = install / "node_modules"
    if sys.platform not in {"linux", "darwin"}:
        raise ClientUnavailableError(f"the e2e suite runs on Linux and macOS, not {sys.platform}")
    if name == "gemini":
        # One bundled Node.js script (the package's ``bin``), run by the node on PATH.
        return modules / "@google" / "gemini-cli" / "bundle" / "gemini.js"
    arch = _machine()
    if name == "codex":
        triple = {
            ("linux", "x64"): "x86_64-unknown-linux-musl",
            ("linux", "arm64"): "aarch64-unknown-linux-musl",
            ("darwin", "x64"): "x86_64-apple-darwin",
            ("darwin", "arm64"): "aarch64-apple-darwin",
        }[(sys.platform, arch)]
        return (
            modules
            / "@openai"
            / f"codex-{sys.platform}-{arch}"
            / "vendor"
            / triple
            / "bin"
            / "codex"
        )
    suffix = "-musl" if sys.platform == "linux" and _is_musl() else ""
    return modules / "@anthropic-ai" / f"claude-code-{sys.platform}-{arch}{suffix}" / "claude"


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def install_dir(name: ClientName) -> Path:
    pin = PINNED[name]
    return CACHE_DIR / f"{name}-{pin.version}"


def ensure_client(name: ClientName) -> Path:
    """The pinned client's native binary, installed into the cache on first use.

    Raises:
        ClientUnavailableError: node/npm absent (``missing_tools``), npm failed (its output in
            the message), or the package held no binary where its launcher looks.
    """
    pin = PINNED[name]
    target = install_dir(name)
    marker = target / ".installed"
    if marker.is_file():
        return _checked(_binary_in(target, name))
    tools = node_tools()
    if tools is None:
        raise ClientUnavailableError(
            f"node and npm are needed to install {pin.spec} (not found on PATH)",
            missing_tools=True,
        )
    _, npm = tools
    with _locked(CACHE_DIR / f".{name}.lock"):
        if marker.is_file():  # another process finished the install while we waited
            return _checked(_binary_in(target, name))
        staging = CACHE_DIR / f".{target.name}.tmp-{os.getpid()}"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.rmtree(target, ignore_errors=True)  # a half-made folder from a killed install
        staging.mkdir(parents=True)
        command = [
            npm,
            "install",
            "--prefix",
            str(staging),
            "--no-audit",
            "--no-fund",
            "--no-save",
            "--ignore-scripts",  # the platform package holds the binary; no postinstall
            "--prefer-offline",
            "--loglevel=error",
            pin.spec,
        ]
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=_INSTALL_TIMEOUT,
                check=False,
                env={**os.environ, "npm_config_update_notifier": "false"},
            )
        except subprocess.TimeoutExpired as exc:
            shutil.rmtree(staging, ignore_errors=True)
            raise ClientUnavailableError(
                f"npm install {pin.spec} took over {_INSTALL_TIMEOUT}s"
            ) from exc
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise ClientUnavailableError(
                f"npm install {pin.spec} failed (exit {done.returncode}):\n"
                f"{done.stderr.strip() or done.stdout.strip()}"
            )
        _checked(_binary_in(staging, name))
        (staging / ".installed").write_text(pin.spec + "\n", encoding="utf-8")
        os.rename(staging, target)
    return _checked(_binary_in(target, name))


def _checked(binary: Path) -> Path:
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise ClientUnavailableError(f"the installed package has no executable at {binary}")
    return binary


# --- throwaway homes --------------------------------------------------------------------


def codex_home(
    root: Path,
    server: ModelServer,
    *,
    model: str = "gpt-5-agc-e2e",
    env_key: str = "AGC_E2E_API_KEY",
) -> Path:
    """A fresh ``CODEX_HOME`` under ``root`` whose only provider is ``server``.

    The provider is a custom ``model_provider`` speaking the Responses API
    (``wire_api = "responses"``, ``env_key`` naming the env var of a dummy key). Retries
    are off so a refused request fails at once; update checks, analytics and feedback
    are off.
    """
    home = root / "codex-home"
    home.mkdir(parents=True, exist_ok=False)
    (home / "config.toml").write_text(
        f"""\
model = "{model}"
model_provider = "{MODEL_PROVIDER}"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
hide_agent_reasoning = true

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[features]
plugins = false
remote_plugin = false
plugin_sharing = false
apps = false
in_app_updates = false
api_key_model_discovery = false
skill_mcp_dependency_install = false
tool_suggest = false
image_generation = false
browser_use = false
computer_use = false
shell_snapshot = false

[model_providers.{MODEL_PROVIDER}]
name = "agc e2e scripted server"
base_url = "{server.url}/v1"
wire_api = "responses"
env_key = "{env_key}"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 600000
""",
        encoding="utf-8",
    )
    return home


RUNTIME_DIRS: Final[list[Path]] = []
"""Every sandbox's ``$XDG_RUNTIME_DIR`` made in this process, in order (see
:func:`runtime_dir`); :func:`stop_residents` removes one."""


def runtime_dir() -> Path:
    """A new private folder (mode 0700) for a sandbox's ``$XDG_RUNTIME_DIR``, directly
    under ``/tmp`` so that the socket paths of agc's resident capture process fit the
    107 bytes of a Unix socket's path. Without it a sandbox whose ``$TMPDIR`` is too
    long (a pytest-xdist worker's) falls back to the ``/tmp/agc-<uid>`` shared by every
    sandbox and the user, and its resident process cannot be told from another's."""
    folder = Path(tempfile.mkdtemp(prefix="agc-e2e-", dir="/tmp"))
    RUNTIME_DIRS.append(folder)
    return folder


def stop_residents(folder: Path, *, wait_s: float = 10.0) -> list[int]:
    """Stop (SIGTERM) the processes whose command line names ``folder`` or a path in it
    (agc's resident capture processes, run as ``_hookclient.py --serve FOLDER/agc KEY``)
    or whose environment has it as ``XDG_RUNTIME_DIR`` (whatever a sandbox's client
    started: a tool's shell outlives a client killed mid-call when the client started it
    in a session of its own, out of reach of the client's group kill), wait up to
    ``wait_s`` for them to exit, remove ``folder``; the pids signalled."""
    prefix = os.fsencode(str(folder))
    runtime = b"XDG_RUNTIME_DIR=" + prefix
    signalled = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            arguments = (entry / "cmdline").read_bytes().split(b"\0")
            environment = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # exited meanwhile, or not ours to read
        if runtime in environment or any(
            a == prefix or a.startswith(prefix + b"/") for a in arguments
        ):
            with suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGTERM)
                signalled.append(int(entry.name))
    deadline = time.monotonic() + wait_s
    for pid in signalled:
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
    shutil.rmtree(folder, ignore_errors=True)
    with suppress(ValueError):
        RUNTIME_DIRS.remove(folder)
    return signalled


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaps it when it is a child of this process
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    if stat.rpartition(")")[2].split()[0] != "Z":
        return True
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # it exited after the first look: reap it now
    return False


def _base_env(root: Path, server: ModelServer) -> dict[str, str]:
    home = root / "home"
    home.mkdir(parents=True, exist_ok=True)
    (root / "tmp").mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": str(root / "tmp"),
        "XDG_RUNTIME_DIR": str(runtime_dir()),
        **proxy_env(server),
    }
    return env


def codex_env(root: Path, server: ModelServer, home: Path) -> dict[str, str]:
    """The environment to run the Codex binary in: its home, the dummy key, the proxy."""
    return {
        **_base_env(root, server),
        "CODEX_HOME": str(home),
        "AGC_E2E_API_KEY": API_KEY,
        "RUST_LOG": os.environ.get("AGC_E2E_RUST_LOG", "error"),
    }


def claude_home(root: Path) -> Path:
    """A fresh Claude Code config folder (``CLAUDE_CONFIG_DIR``) under ``root``.

    ``settings.json`` turns off the auto-updater and non-essential traffic; the global
    state file marks onboarding done so a headless run asks nothing.
    """
    config = root / "claude-config"
    config.mkdir(parents=True, exist_ok=False)
    (config / "settings.json").write_text(
        '{"env": {"DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},'
        ' "permissions": {"allow": ["Bash"]}}\n',
        encoding="utf-8",
    )
    (config / ".claude.json").write_text(
        '{"hasCompletedOnboarding": true, "bypassPermissionsModeAccepted": true}\n',
        encoding="utf-8",
    )
    return config


def claude_env(root: Path, server: ModelServer, config: Path) -> dict[str, str]:
    """The environment to run Claude Code in: Messages API at ``server``, dummy key."""
    return {
        **_base_env(root, server),
        "CLAUDE_CONFIG_DIR": str(config),
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": API_KEY,
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "CLAUDE_CODE_DISABLE_TERMINAL_TITLE": "1",
        "CLAUDE_CODE_ENABLE_TELEMETRY": "0",
        "IS_SANDBOX": "1",  # root in a container: allow --dangerously-skip-permissions
    }


def gemini_home(root: Path) -> Path:
    """A fresh Gemini CLI home (``GEMINI_CLI_HOME``) under ``root``.

    ``.gemini/settings.json`` selects API-key auth (with a base URL set and no auth type
    chosen, ``gemini -p`` exits 41 "Invalid auth method selected") and turns off
    auto-update, its notification, usage statistics and telemetry.
    """
    home = root / "gemini-home"
    (home / ".gemini").mkdir(parents=True, exist_ok=False)
    settings = {
        "security": {"auth": {"selectedType": "gemini-api-key"}},
        "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
    }
    (home / ".gemini" / "settings.json").write_text(
        json.dumps(settings, indent=2) + "\n", encoding="utf-8"
    )
    return home


def gemini_settings(home: Path) -> Path:
    """The user settings file of the Gemini CLI home ``home``."""
    return home / ".gemini" / "settings.json"


def gemini_env(root: Path, server: ModelServer, home: Path) -> dict[str, str]:
    """The environment to run the Gemini CLI in: the Gemini API at ``server``, dummy key.

    ``GOOGLE_GEMINI_BASE_URL`` is the documented base URL of the Gemini API for API-key
    auth (plain http is accepted for localhost); ``GEMINI_CLI_NO_RELAUNCH`` keeps the CLI
    in one process (no relaunch into a child ``node`` with a larger heap).
    """
    return {
        **_base_env(root, server),
        "GEMINI_CLI_HOME": str(home),
        "GOOGLE_GEMINI_BASE_URL": server.url,
        "GEMINI_API_KEY": API_KEY,
        "GEMINI_CLI_NO_RELAUNCH": "true",
    }


def main() -> int:
    """``python -m tests.e2e.clients``: install the pinned clients, print their binaries."""
    status = 0
    for name, pin in PINNED.items():
        try:
            print(f"{pin.spec}: {ensure_client(name)}")
        except ClientUnavailableError as exc:
            print(f"{pin.spec}: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    raise SystemExit(main())
