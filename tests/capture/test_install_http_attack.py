# ruff: noqa: F811
"""The secret of agc's HTTP hooks is never where another local user may read it, and a
moved port gets a new one."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import pytest

from agc._core.fs import atomic_write_bytes
from agc.capture import _install_files, read_http_hook
from agc.cli.app import main
from tests.capture.test_install_http import (
    _settings,
    home,  # noqa: F401 - the fixture
)

REACHES_INSIDE = {"agc.capture._install_files": "the write of the settings file, watched"}


def test_the_secret_is_never_on_disk_where_others_may_read_it(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A settings file others may read (0644, the usual) gets the secret: it must be
    written private, not made private after the secret is on disk."""
    settings = _settings(home)
    settings.parent.mkdir(parents=True)
    settings.write_text('{"theme": "dark"}\n')
    settings.chmod(0o644)
    seen: list[int] = []

    def watched(path: Any, data: bytes, **kwargs: Any) -> None:
        atomic_write_bytes(path, data, **kwargs)
        if b"Bearer " in data:
            seen.append(stat.S_IMODE(Path(path).stat().st_mode))

    monkeypatch.setattr(_install_files, "atomic_write_bytes", watched)
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    assert seen, "the secret was not written through atomic_write_bytes"
    assert all(mode & 0o077 == 0 for mode in seen), [oct(m) for m in seen]


def test_moving_the_port_gives_a_new_secret(home: Path) -> None:
    """The documented remedy for a port another program holds is to install again with
    --port: by then that program has been sent the secret in every event's header, so
    the secret must change with the port."""
    assert main(["hooks", "install", "--client", "claude-code"]) == 0
    first = read_http_hook()
    assert first is not None
    port = 20000 + (first.port + 1) % 10000
    assert main(["hooks", "install", "--client", "claude-code", "--port", str(port)]) == 0
    second = read_http_hook()
    assert second is not None
    assert second.port == port
    assert second.secret != first.secret
