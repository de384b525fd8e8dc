"""Ed25519 signing keys of run manifests: key files, key ids, trusted-key folders.

The signature itself (RFC 8785 canonical JSON without the ``signature`` member, signed
with Ed25519) is :mod:`agc._core.signing`. Since the manifest names the run id, every
artifact's file name, digest, length and record count, and the store chain link, a
signed manifest or a sidecar moved to another run, or a file re-sealed by someone
without the key, fails.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import stat
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Final

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from agc._core.fs import (
    MACHINE_ERRNOS,
    describe_os_error,
    file_type_name,
    prepare_write,
    read_at_most,
    write_error,
)
from agc._core.signing import (
    SignatureStatus,
    SigningKey,
    canonical_bytes,
    check_signature,
    key_id_of,
    sign_document,
)
from agc.errors import (
    FileExistsRefusedError,
    FileUnreadableError,
    KeyInvalidError,
    StoreError,
    UsageError,
)

__all__ = [
    "PRIVATE_KEY_NAME",
    "PUBLIC_KEY_NAME",
    "SignatureStatus",
    "SigningKey",
    "canonical_bytes",
    "check_signature",
    "generate_keypair",
    "key_id_of",
    "load_signing_key",
    "load_trusted_keys",
    "sign_document",
]

PRIVATE_KEY_NAME: Final = "signing-key.pem"
PUBLIC_KEY_NAME: Final = "signing-key.pub.pem"
_O_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
MAX_KEY_BYTES: Final = 64 * 1024
"""A PEM key file is read only up to this length: an Ed25519 key in PEM is about 120
bytes, so a larger file (or ``/dev/zero``) is refused instead of read whole."""


def generate_keypair(out_dir: Path) -> tuple[Path, Path, str]:
    """Create ``signing-key.pem`` (mode 0600, PKCS#8) and ``signing-key.pub.pem`` in ``out_dir``.

    Both files are written completely (and fsynced) under temporary names before either
    takes its name, and the private key is removed again if the public key cannot be
    put in place: a full disk or a read-only folder leaves no key, never a 0-byte or a
    lone key, so running the command again works.

    Returns ``(private path, public path, key id)``.

    Raises:
        FileExistsRefusedError: either file exists (keys are never overwritten).
        UsageError: ``out_dir`` exists and is not a folder.
        FileWriteError: the disk is full, read-only … (nothing is left behind).
        StoreError: the folder or a key file cannot be created for another reason.
    """
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} is not a folder", hint="Give --out a folder for the keys.")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in MACHINE_ERRNOS:
            raise write_error(out_dir, exc, doing="create the key folder") from exc
        raise StoreError(
            f"cannot create key folder {out_dir}: {describe_os_error(exc)}",
            hint="Give --out a folder you may create and write.",
        ) from exc
    private_path, public_path = out_dir / PRIVATE_KEY_NAME, out_dir / PUBLIC_KEY_NAME
    for path in (private_path, public_path):
        _refuse_existing(path)
    private_key = Ed25519PrivateKey.generate()
    private_pem = private_key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    try:
        with (
            prepare_write(private_path, private_pem, mode=0o600) as private_new,
            prepare_write(public_path, public_pem, mode=0o644) as public_new,
        ):
            private_new.commit(overwrite=False)
            try:
                public_new.commit(overwrite=False)
            except BaseException:
                os.unlink(private_path)  # no lone private key: the pair is made again
                raise
    except FileExistsRefusedError as exc:
        raise FileExistsRefusedError(
            f"{exc.message.removesuffix(' already exists')} already exists; "
            "keys are never overwritten"
        ) from exc
    except OSError as exc:  # not a failure of the machine (those are FileWriteError)
        raise StoreError(
            f"cannot create the keys in {out_dir}: {describe_os_error(exc)}",
            hint="Give --out a folder you may write.",
        ) from exc
    os.chmod(private_path, 0o600)
    os.chmod(public_path, 0o644)
    return private_path, public_path, key_id_of(private_key.public_key())


def _refuse_existing(path: Path) -> None:
    if not os.path.lexists(path):
        return
    hint = None
    with contextlib.suppress(OSError):
        if path.lstat().st_size == 0:
            hint = (
                f"{path.name} is empty (left by an interrupted key generation?): "
                "remove it and run the command again."
            )
    raise FileExistsRefusedError(f"{path} already exists; keys are never overwritten", hint=hint)


def _read_key_file(path: Path, what: str, *, pipe_ok: bool = True) -> bytes:
    """The bytes of the key file ``path`` (``what`` names it in messages: "signing key
    /k.pem"), read up to :data:`MAX_KEY_BYTES`.

    Symlinks are followed, as for any named file. It is opened with ``O_NONBLOCK``, so
    the open itself never waits, and must be a regular file: a folder, a device
    (``/dev/zero``, a terminal), a socket or, in a trusted-key folder (``pipe_ok``
    false), a FIFO is refused before anything is read. A pipe named on the command line
    (``--trusted-key <(vault read …)``) is read until its writer closes it, for at most
    :data:`KEY_PIPE_SECONDS` in all: a FIFO nobody writes fails instead of hanging.

    Raises:
        KeyInvalidError: absent, not a regular file (or a pipe that gave no whole key in
            time), or larger than :data:`MAX_KEY_BYTES` (exit 2).
        FileUnreadableError: it exists but cannot be opened or read (permissions, an
            I/O error; exit 3).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _O_CLOEXEC)
    except OSError as exc:
        raise _unreadable_key(path, what, exc) from exc
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISFIFO(mode) and pipe_ok:
            data = _read_pipe(fd, what)
        elif stat.S_ISREG(mode):
            data = read_at_most(fd, MAX_KEY_BYTES)
        else:
            raise _not_a_regular_file(path, what, mode)
    except OSError as exc:
        raise _unreadable_key(path, what, exc) from exc
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_BYTES:
        raise KeyInvalidError(
            f"key file {path} is larger than {MAX_KEY_BYTES} bytes; an Ed25519 PEM key "
            "is a few hundred"
        )
    return data


KEY_PIPE_SECONDS: Final = 10.0
"""How long a key named as a pipe (``<(vault read …)``, a FIFO) may take to arrive, in
all, before it is refused as ``key-invalid``."""


def _read_pipe(fd: int, what: str) -> bytes:
    """Read the non-blocking pipe ``fd`` until its writer closes it, at most
    :data:`MAX_KEY_BYTES` + 1 bytes, for at most :data:`KEY_PIPE_SECONDS` in all.

    Raises:
        KeyInvalidError: the time ran out (nobody writes the FIFO, or never closes it).
        OSError: reading failed.
    """
    deadline = time.monotonic() + KEY_PIPE_SECONDS
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    chunks: list[bytes] = []
    left = MAX_KEY_BYTES + 1
    while left > 0:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not poller.poll(remaining * 1000):
            raise KeyInvalidError(
                f"{what} is not a regular file: a FIFO, and nothing wrote a whole key to "
                f"it within {KEY_PIPE_SECONDS:g} s",
                hint="Name the key file itself; a pipe (`<(vault read …)`) must deliver "
                f"the key and close within {KEY_PIPE_SECONDS:g} s.",
            )
        try:
            chunk = os.read(fd, min(left, 65536))
        except BlockingIOError:
            continue
        if not chunk:  # the writer closed it: the whole key (or, with no writer, none)
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _not_a_regular_file(path: Path, what: str, mode: int) -> KeyInvalidError:
    """The error for a key file ``what`` whose ``st_mode`` is ``mode`` (no regular file)."""
    if stat.S_ISDIR(mode):
        return KeyInvalidError(f"{what} is a folder, not a key file")
    return KeyInvalidError(
        f"{what} is not a regular file: {file_type_name(mode)}",
        hint=f"Put a PEM key file in place of {path.name} (or remove it); a key is "
        "read only from a regular file.",
    )


def _unreadable_key(path: Path, what: str, exc: OSError) -> KeyInvalidError | FileUnreadableError:
    """The error for a key file ``what`` ("signing key /k.pem") that ``open``/``read``
    refused: absent, a folder or a socket is not a key (``key-invalid``, exit 2); a key
    file that exists but cannot be read (permissions, an I/O error) is
    ``file-unreadable`` (exit 3), as for every input file: agc could not look at it."""
    if isinstance(exc, FileNotFoundError):
        return KeyInvalidError(f"{what} does not exist")
    if isinstance(exc, IsADirectoryError):
        return KeyInvalidError(f"{what} is a folder, not a key file")
    if exc.errno == errno.ENXIO:  # open(2) of a socket (or a device with no driver)
        with contextlib.suppress(OSError):
            mode = path.stat().st_mode
            if not stat.S_ISREG(mode):
                return _not_a_regular_file(path, what, mode)
    return FileUnreadableError(f"cannot read {what}: {describe_os_error(exc)}")


def load_signing_key(path: Path) -> SigningKey:
    """Load an Ed25519 private key (PEM, unencrypted) from a regular file or a pipe
    (see :func:`_read_key_file`).

    Raises:
        KeyInvalidError: missing, a folder, a device, a socket, a pipe that gave no key
            within :data:`KEY_PIPE_SECONDS`, or not an Ed25519 private key (exit 2).
        FileUnreadableError: it exists but cannot be read (permissions, an I/O error;
            exit 3).
    """
    data = _read_key_file(path, f"signing key {path}")
    if not data.strip():
        raise KeyInvalidError(
            f"signing key {path} is empty",
            hint="Create a new pair with `agc keys generate --out DIR` (remove the empty file).",
        )
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise KeyInvalidError(f"{path} is not an unencrypted PEM private key: {exc}") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyInvalidError(f"{path} is not an Ed25519 key")
    return SigningKey(private_key=key, key_id=key_id_of(key.public_key()))


def load_public_key(path: Path) -> Ed25519PublicKey:
    """Load an Ed25519 public key (PEM) from a regular file or a pipe (see
    :func:`_read_key_file`).

    Raises:
        KeyInvalidError: missing, a folder, a device, a socket, a pipe that gave no key
            within :data:`KEY_PIPE_SECONDS`, a private key, or not an Ed25519 public key
            (exit 2).
        FileUnreadableError: it exists but cannot be read (permissions, an I/O error;
            exit 3).
    """
    return _public_key_from(_read_key_file(path, f"trusted key {path}"), path)


def _public_key_from(data: bytes, path: Path) -> Ed25519PublicKey:
    """The Ed25519 public key in ``data``, the bytes of the key file ``path``.

    Raises:
        KeyInvalidError: a private key, or not an Ed25519 public key in PEM.
    """
    if _is_private_pem(data):
        public = path.with_name(path.name.removesuffix(".pem") + ".pub.pem")
        raise KeyInvalidError(
            f"{path} is a private key, not a public key",
            hint=f"Trust the public key beside it: --trusted-key {public}"
            if public.exists()
            else "Trust the public key (the .pub.pem file `agc keys generate` wrote).",
        )
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise KeyInvalidError(f"{path} is not a PEM public key: {exc}") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyInvalidError(f"{path} is not an Ed25519 public key")
    return key


def _is_private_pem(data: bytes) -> bool:
    return b"PRIVATE KEY-----" in data[:4096]


def load_trusted_keys(
    paths: Iterable[Path] = (),
    *,
    folder: Path | None = None,
    on_note: Callable[[str], None] | None = None,
) -> dict[str, Ed25519PublicKey]:
    """Trusted public keys by key id, from key files and folders of keys.

    Args:
        paths: public key files (PEM) or folders; a folder is read as ``folder`` is.
        folder: a folder of keys (``$AGC_TRUSTED_KEYS``): every ``*.pem`` in it. A
            private key there (the folder ``agc keys generate`` made holds one) is
            skipped with a note; every other ``*.pem`` must be a regular file (symlinks
            followed; a FIFO, device or socket is refused, never waited on) holding an
            Ed25519 public key, else the whole call fails.
        on_note: called with a one-line note for every skipped private key.

    Raises:
        KeyInvalidError: a named file does not exist, is a private key or not an Ed25519
            public key; a folder does not exist, is a file, holds no public key, or
            holds a ``*.pem`` that is no regular file or no Ed25519 public key.
        FileUnreadableError: a key file exists but cannot be read (exit 3).
    """
    keys: dict[str, Ed25519PublicKey] = {}
    for path in paths:
        if path.is_dir():
            keys.update(_load_folder(path, "trusted-key folder", on_note))
        else:
            key = load_public_key(path)
            keys[key_id_of(key)] = key
    if folder is not None:
        keys.update(_load_folder(folder, "$AGC_TRUSTED_KEYS folder", on_note))
    return keys


def _load_folder(
    folder: Path, label: str, on_note: Callable[[str], None] | None
) -> dict[str, Ed25519PublicKey]:
    if not folder.exists():
        raise KeyInvalidError(f"{label} {folder} does not exist")
    if not folder.is_dir():
        raise KeyInvalidError(
            f"{label} {folder} is a file, not a folder",
            hint="Point $AGC_TRUSTED_KEYS at a folder of public keys; name a single key "
            "file with --trusted-key.",
        )
    keys: dict[str, Ed25519PublicKey] = {}
    for path in sorted(folder.glob("*.pem")):
        # Read once, never waited on: an entry that is no regular file fails the command
        # as one that is no public key does (a private key alone is skipped).
        data = _read_key_file(path, f"{path} in {label} {folder}", pipe_ok=False)
        if _is_private_pem(data):
            if on_note is not None:
                on_note(f"skipped {path}: a private key (only public keys are trusted)")
            continue
        key = _public_key_from(data, path)
        keys[key_id_of(key)] = key
    if not keys:
        raise KeyInvalidError(
            f"{label} {folder} holds no public key (*.pem)",
            hint="An empty trust list would trust nothing: add the .pub.pem files of "
            "the keys that sign your runs.",
        )
    return keys
