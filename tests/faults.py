"""Failures of the machine for tests: an injected errno under one folder, or a real tmpfs.

:func:`failing_disk` makes the ``os`` calls agc writes with (``open``, ``write``,
``fsync``, ``mkdir``, ``replace``, ``link``, ``unlink``) fail under one folder the way a
full, read-only or failing disk does; files elsewhere (pytest's own, the input) are not
touched. :func:`tmpfs` mounts a small real tmpfs (root only), so the kernel itself says
"no space left on device" or "read-only file system"; the test skips with the reason
when mounting is not permitted. :func:`kill_at_step`, installed in a forked child, kills
the process right before its k-th mutating system call: the crash-point injector.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

import pytest

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


@dataclass
class DiskFault:
    """The state of an injected fault; ``lift()`` makes the disk healthy again.

    Attributes:
        root: only paths under this folder fail.
        err: ``ENOSPC``, ``EDQUOT`` (writes beyond ``budget`` bytes fail), ``EROFS``
            (nothing can be created, written, renamed or removed) or ``EIO`` (writes and
            fsyncs beyond ``budget`` fail).
        budget: bytes that may still be written before writes fail.
        only: a file-name pattern (fnmatch); when set, only such files fail.
        hits: how many calls failed.
    """

    root: Path
    err: int
    budget: int = 0
    only: str | None = None
    hits: int = 0
    active: bool = True
    _real: dict[str, Callable[..., Any]] = field(default_factory=dict)

    def lift(self) -> None:
        self.active = False

    def _covers(self, path: str | os.PathLike[str] | None) -> bool:
        if not self.active or path is None:
            return False
        absolute = os.path.abspath(os.fspath(path))
        root = os.fspath(self.root)
        if not (absolute == root or absolute.startswith(root + os.sep)):
            return False
        return self.only is None or fnmatch(os.path.basename(absolute), self.only)

    def _covers_fd(self, fd: int) -> bool:
        try:
            return self._covers(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return False

    def _fail(self, path: object) -> OSError:
        self.hits += 1
        return OSError(self.err, os.strerror(self.err), str(path))

    @property
    def _read_only(self) -> bool:
        return self.err == errno.EROFS


@contextmanager
def failing_disk(
    monkeypatch: pytest.MonkeyPatch,
    root: Path,
    err: int,
    *,
    budget: int = 0,
    only: str | None = None,
) -> Iterator[DiskFault]:
    """Inject ``err`` into every write under ``root`` (see :class:`DiskFault`)."""
    fault = DiskFault(root=root, err=err, budget=budget, only=only)
    real_open, real_write, real_fsync = os.open, os.write, os.fsync
    real_mkdir, real_replace, real_link, real_unlink = os.mkdir, os.replace, os.link, os.unlink

    def fake_open(path: Any, flags: int, mode: int = 0o777, *args: Any, **kw: Any) -> int:
        if fault._read_only and flags & _WRITE_FLAGS and fault._covers(path):
            raise fault._fail(path)
        return real_open(path, flags, mode, *args, **kw)

    def fake_write(fd: int, data: Any) -> int:
        if fault._covers_fd(fd):
            if fault._read_only:
                raise fault._fail(os.readlink(f"/proc/self/fd/{fd}"))
            size = len(data)
            if fault.budget <= 0:
                raise fault._fail(os.readlink(f"/proc/self/fd/{fd}"))
            if size > fault.budget:  # a short write, as a disk that fills midway gives
                done = real_write(fd, memoryview(data)[: fault.budget])
                fault.budget = 0
                return done
            fault.budget -= size
        return real_write(fd, data)

    def fake_fsync(fd: int) -> None:
        if fault.err == errno.EIO and fault.budget <= 0 and fault._covers_fd(fd):
            raise fault._fail(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    def fake_mkdir(path: Any, mode: int = 0o777, *args: Any, **kw: Any) -> None:
        if fault._read_only and fault._covers(path) and not os.path.isdir(path):
            raise fault._fail(path)
        real_mkdir(path, mode, *args, **kw)

    def guarded(real: Callable[..., Any]) -> Callable[..., Any]:
        def call(source: Any, target: Any = None, *args: Any, **kw: Any) -> Any:
            if fault._read_only and (fault._covers(source) or fault._covers(target)):
                raise fault._fail(target if target is not None else source)
            if target is None:
                return real(source, *args, **kw)
            return real(source, target, *args, **kw)

        return call

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "write", fake_write)
    monkeypatch.setattr(os, "fsync", fake_fsync)
    monkeypatch.setattr(os, "mkdir", fake_mkdir)
    monkeypatch.setattr(os, "replace", guarded(real_replace))
    monkeypatch.setattr(os, "link", guarded(real_link))
    monkeypatch.setattr(os, "unlink", guarded(real_unlink))
    try:
        yield fault
    finally:
        fault.lift()


def temp_files(root: Path) -> list[str]:
    """Temporary files agc's atomic writer would leave behind (``.<name>.<hex>.tmp``)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*.tmp"))


@contextmanager
def tmpfs(mount_point: Path, *, size: str = "64k") -> Iterator[Path]:
    """Mount a real tmpfs of ``size`` at ``mount_point`` for the ``with`` body.

    Skips the test (with the reason) when the mount is not permitted: not root, or in a
    container without the capability.
    """
    mount_point.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'mount failed'})")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False, capture_output=True)


def remount(mount_point: Path, options: str) -> None:
    """``mount -o remount,<options>`` (``ro``, ``rw``, ``size=1m`` …)."""
    subprocess.run(["mount", "-o", f"remount,{options}", str(mount_point)], check=True)


def fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` with one file; returns it (delete it to free)."""
    filler = folder / "filler"
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 4096)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler


MUTATING_CALLS = ("write", "open", "replace", "rename", "link", "unlink", "ftruncate")
"""The ``os`` calls that change a file system (``open`` only with ``O_CREAT``/``O_TRUNC``)."""


def kill_at_step(
    step: int, *, torn: bool = False, names: list[str] | None = None
) -> Callable[[], int]:
    """Make the ``step``-th mutating call (1-based) end the process with ``os._exit(9)``.

    Meant for a forked child: nothing is flushed or cleaned up, as under ``kill -9``.
    With ``torn``, a ``write`` chosen as the kill point first writes half its bytes (a
    write torn by the crash). Returns a counter of the mutating calls made so far, so a
    child run with a huge ``step`` measures how many steps an operation takes;
    ``names``, when given, receives the name of each counted call (``"write"``, …), in
    order: step ``k`` is the call ``names[k - 1]``.
    """
    calls = 0
    originals = {name: getattr(os, name) for name in MUTATING_CALLS}

    def wrap(name: str) -> Callable[..., Any]:
        original = originals[name]

        def call(*args: Any, **kwargs: Any) -> Any:
            nonlocal calls
            if name == "open" and not (args[1] if len(args) > 1 else kwargs["flags"]) & (
                os.O_CREAT | os.O_TRUNC
            ):
                return original(*args, **kwargs)
            calls += 1
            if names is not None:
                names.append(name)
            if calls == step:
                if torn and name == "write" and len(args[1]) > 1:
                    original(args[0], bytes(args[1])[: len(args[1]) // 2])
                os._exit(9)
            return original(*args, **kwargs)

        return call

    for name in MUTATING_CALLS:
        setattr(os, name, wrap(name))
    return lambda: calls
