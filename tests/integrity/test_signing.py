"""Ed25519 manifest signatures: valid, bad, unknown key, unsigned, and what they bind."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import socket
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agc._core.digest import new_hasher
from agc.errors import (
    AgcError,
    FileExistsRefusedError,
    FileUnreadableError,
    KeyInvalidError,
    RecoveryRefusedError,
    UsageError,
)
from agc.integrity import (
    TranscriptWriter,
    check_run,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
    open_run,
    recover_run,
)
from agc.integrity import _signing as signing_module
from agc.integrity import _writer as writer_module
from agc.integrity._signing import load_public_key
from tests.conftest import tree
from tests.integrity.evidence_helpers import transcript_path, write_run

REACHES_INSIDE = {
    "agc.integrity._signing": "the single public-key loader, and swaps its reader and pipe timeout",
    "agc.integrity._writer": "swaps the writer's linked-run guard",
}


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    private, public, _ = generate_keypair(tmp_path / "keys")
    other_private, other_public, _ = generate_keypair(tmp_path / "other")
    return {"private": private, "public": public, "other": other_private, "other_pub": other_public}


def test_generate_writes_private_key_0600_and_refuses_overwrite(tmp_path: Path) -> None:
    private, public, key_id = generate_keypair(tmp_path / "k")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    assert len(key_id) == 64
    assert key_id in load_trusted_keys([public])
    with pytest.raises(FileExistsRefusedError):
        generate_keypair(tmp_path / "k")


def test_signed_run_verifies_with_the_trusted_key(store: Path, keys: dict[str, Path]) -> None:
    write_run(store, "r", signing_key=load_signing_key(keys["private"]))
    report = check_run("r", store, trusted_keys=load_trusted_keys([keys["public"]]))
    assert report.complete
    assert report.signature == "signature-valid"


def test_signing_with_an_untrusted_key_is_unknown_key(store: Path, keys: dict[str, Path]) -> None:
    write_run(store, "r", signing_key=load_signing_key(keys["other"]))
    report = check_run("r", store, trusted_keys=load_trusted_keys([keys["public"]]))
    assert report.signature == "unknown-key"
    assert "unknown-key" in {f.code for f in report.findings}
    assert not report.complete


def test_a_forged_key_id_never_reaches_the_report_raw(store: Path, keys: dict[str, Path]) -> None:
    """The key id is store content: with a newline and an escape it could forge lines
    ("run r: complete") and hide the rest of a terminal's output."""
    write_run(store, "r", signing_key=load_signing_key(keys["private"]))
    path = store / "audit/manifests/r.json"
    manifest = json.loads(path.read_text())
    manifest["signature"]["key_id"] = "ab\nrun r: complete\x1b[8m"
    path.write_text(json.dumps(manifest))
    report = check_run("r", store, trusted_keys=load_trusted_keys([keys["public"]]))
    assert not report.complete
    assert report.key_id is None
    for finding in report.findings:
        assert "\n" not in finding.message
        assert "\x1b" not in finding.message


def test_a_member_added_to_the_manifest_signature_is_bad_signature(
    store: Path, keys: dict[str, Path]
) -> None:
    # The signature member is not signed: what is added there is covered by nothing.
    write_run(store, "r", signing_key=load_signing_key(keys["private"]))
    path = store / "audit/manifests/r.json"
    manifest = json.loads(path.read_text())
    manifest["signature"]["note"] = "approved by the release manager"
    path.write_text(json.dumps(manifest))
    report = check_run("r", store, trusted_keys=load_trusted_keys([keys["public"]]))
    assert report.signature == "bad-signature"
    assert not report.complete


def test_resealing_a_tampered_file_without_the_key_is_bad_signature(
    store: Path, keys: dict[str, Path]
) -> None:
    write_run(store, "r", signing_key=load_signing_key(keys["private"]))
    path = transcript_path(store, "r")
    data = path.read_bytes().replace(b"message 0", b"message 9")
    path.write_bytes(data)
    hasher = new_hasher("blake3")
    hasher.update(data)
    digest = hasher.hexdigest()
    path.with_name("r.jsonl.b3").write_text(f"{digest}  r.jsonl\n")
    manifest_path = store / "audit/manifests/r.json"
    manifest = json.loads(manifest_path.read_text())
    manifest["artifacts"]["transcript"]["digest"] = digest
    manifest_path.write_text(json.dumps(manifest))
    report = check_run("r", store, trusted_keys=load_trusted_keys([keys["public"]]))
    assert report.signature == "bad-signature"
    assert not report.complete
    # Without the signature check the files and manifest agree, but the manifest is no
    # longer the one the store chain linked.
    assert [f.code for f in check_run("r", store).errors] == ["replaced"]


def test_manifest_moved_to_another_run_fails(store: Path, keys: dict[str, Path]) -> None:
    signer = load_signing_key(keys["private"])
    write_run(store, "a", seed=1, signing_key=signer)
    write_run(store, "b", seed=2, signing_key=signer)
    manifests = store / "audit/manifests"
    shutil.copy(manifests / "a.json", manifests / "b.json")
    report = check_run("b", store, trusted_keys=load_trusted_keys([keys["public"]]))
    assert "manifest-invalid" in {f.code for f in report.findings}


def test_a_trusted_key_makes_an_unsigned_run_incomplete(store: Path, keys: dict[str, Path]) -> None:
    write_run(store, "r")
    trusted = load_trusted_keys([keys["public"]])
    for report in (
        check_run("r", store, trusted_keys=trusted),
        check_run("r", store, trusted_keys=trusted, require_signature=True),
    ):
        assert not report.complete
        assert {f.code for f in report.findings} == {"unsigned"}
    assert check_run("r", store, trusted_keys=trusted, allow_unsigned=True).complete


def test_allow_unsigned_still_checks_the_signed_runs(store: Path, keys: dict[str, Path]) -> None:
    write_run(store, "r", signing_key=load_signing_key(keys["other"]))
    trusted = load_trusted_keys([keys["public"]])
    report = check_run("r", store, trusted_keys=trusted, allow_unsigned=True)
    assert {f.code for f in report.findings} == {"unknown-key"}


def test_require_and_allow_unsigned_together_is_a_usage_error(
    store: Path, keys: dict[str, Path]
) -> None:
    write_run(store, "r")
    trusted = load_trusted_keys([keys["public"]])
    with pytest.raises(UsageError, match="contradict"):
        check_run("r", store, trusted_keys=trusted, require_signature=True, allow_unsigned=True)


def _strip_signature(store: Path, run_id: str) -> None:
    path = store / "audit/manifests" / f"{run_id}.json"
    manifest = json.loads(path.read_bytes())
    del manifest["signature"]
    path.write_bytes(json.dumps(manifest, indent=2, sort_keys=True).encode() + b"\n")


def _to_legacy(store: Path, run_id: str) -> None:
    """Downgrade to the legacy store shape: digest-only SHA-256 sidecar, no manifest."""
    (store / "audit/manifests" / f"{run_id}.json").unlink()
    for folder in ("transcripts", "tool-events"):
        path = store / "audit" / folder / f"{run_id}.jsonl"
        path.with_name(path.name + ".b3").unlink()
        hasher = new_hasher("sha256")
        hasher.update(path.read_bytes())
        path.with_name(path.name + ".sha256").write_text(hasher.hexdigest() + "\n")


def _append_unsigned_segment(store: Path, run_id: str) -> None:
    with TranscriptWriter(run_id, store=store, reopen=True) as writer:
        writer.write({"role": "user", "content": "appended without the key"})


def _fabricate(store: Path, run_id: str) -> None:
    (store / "audit/manifests" / f"{run_id}.json").unlink()
    for folder in ("transcripts", "tool-events"):
        for path in (store / "audit" / folder).glob(f"{run_id}.jsonl*"):
            path.unlink()
    # A new run under the same id, sealed without the key by a writer without the
    # run-exists rule (agc refuses a linked run id; the writer of the store does not).
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(writer_module, "refuse_if_linked", lambda layout, run_id: None)
        write_run(store, run_id, seed=99)


@pytest.mark.parametrize(
    "attack", [_strip_signature, _to_legacy, _append_unsigned_segment, _fabricate]
)
def test_with_a_trusted_key_no_unsigned_form_of_a_signed_run_passes(
    store: Path, keys: dict[str, Path], attack: object
) -> None:
    write_run(store, "r", signing_key=load_signing_key(keys["private"]))
    trusted = load_trusted_keys([keys["public"]])
    assert check_run("r", store, trusted_keys=trusted).complete
    assert callable(attack)
    attack(store, "r")
    report = check_run("r", store, trusted_keys=trusted)
    assert not report.complete
    assert "unsigned" in {f.code for f in report.findings}


def test_a_signature_checked_against_no_key_is_a_warning_not_silence(
    store: Path, keys: dict[str, Path]
) -> None:
    write_run(store, "r", signing_key=load_signing_key(keys["private"]))
    report = check_run("r", store)
    assert report.complete
    warnings = [f for f in report.findings if f.code == "signature-not-verified"]
    assert len(warnings) == 1
    assert warnings[0].severity == "warning"


def test_an_empty_trusted_key_folder_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="holds no"):
        load_trusted_keys(folder=tmp_path / "empty")


def test_a_non_key_file_is_a_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.pem"
    bogus.write_text("not a key")
    with pytest.raises(KeyInvalidError, match=r"bogus\.pem"):
        load_signing_key(bogus)
    with pytest.raises(KeyInvalidError, match=r"bogus\.pem"):
        load_trusted_keys([bogus])


@pytest.mark.parametrize("crash", ["after-transcript-seal", "after-re-open"])
def test_recover_without_the_key_never_strips_a_signed_runs_signature(
    store: Path, keys: dict[str, Path], crash: str
) -> None:
    """Sealing rewrites the manifest: without the key the run would be closed, chained
    and unsigned for good. Refused, nothing changed; with the key it seals signed."""
    key = load_signing_key(keys["private"])
    if crash == "after-transcript-seal":
        run = open_run("r", store=store, signing_key=key)
        run.transcript.write({"role": "user"})
        run.tool_events.write({"tool": "shell"})
        run.transcript.close()
        run.tool_events.flush()
        run.abort()
    else:
        write_run(store, "r", signing_key=key)
        writer = TranscriptWriter("r", store=store, reopen=True, signing_key=key)
        writer.write({"role": "user", "content": "resumed"})
        writer.flush()
        writer.abort()
    before = tree(store)
    with pytest.raises(RecoveryRefusedError, match="needs the signing key"):
        recover_run("r", store)
    assert tree(store) == before
    recover_run("r", store, signing_key=key)
    report = check_run("r", store, trusted_keys=load_trusted_keys([keys["public"]]))
    assert report.complete, report.missing
    assert report.signature == "signature-valid"


@pytest.mark.parametrize("loader", ["trusted", "signing"])
@pytest.mark.parametrize("source", ["dev-zero", "pipe-late-writer"])
def test_a_key_from_an_endless_device_is_refused_and_one_from_a_pipe_is_read(
    tmp_path: Path, keys: dict[str, Path], loader: str, source: str
) -> None:
    """--trusted-key /dev/zero was read whole, until memory ran out; it is refused
    before a byte is read (a device is no key file). A pipe from a program
    (`<(vault read …)`) works."""
    good = keys["public"] if loader == "trusted" else keys["private"]
    load = load_public_key if loader == "trusted" else load_signing_key
    writer = None
    if source == "dev-zero":
        path = Path("/dev/zero")
    else:
        path = tmp_path / "key.fifo"
        os.mkfifo(path)
        if source == "pipe-late-writer":

            def feed() -> None:
                time.sleep(0.2)
                path.write_bytes(good.read_bytes())

            writer = threading.Thread(target=feed)
            writer.start()

    def hung(signum: int, frame: object) -> None:
        raise TimeoutError(f"loading a key from {source} blocked")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(10)
    try:
        if source == "pipe-late-writer":
            assert load(path) is not None
        else:
            with pytest.raises(KeyInvalidError):
                load(path)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        if writer is not None:
            writer.join()


def _refuse_opens_of(monkeypatch: pytest.MonkeyPatch, target: Path, exc: OSError) -> None:
    """Make opening ``target`` fail with ``exc`` (root reads any file whatever its mode)."""
    real_open = os.open

    def refusing_open(path: Any, *args: Any, **kwargs: Any) -> int:
        if os.fspath(path) == os.fspath(target):
            raise exc
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)


def _refuse_reads(monkeypatch: pytest.MonkeyPatch, exc: OSError) -> None:
    """Make reading an opened key file fail with ``exc`` (a disk error cannot be made
    on demand)."""

    def failing_read(fd: int, max_bytes: int) -> bytes:
        raise exc

    monkeypatch.setattr(signing_module, "read_at_most", failing_read)


@pytest.mark.parametrize("loader", ["signing", "trusted", "trusted-folder"])
@pytest.mark.parametrize(
    ("failure", "expected", "code"),
    [
        ("eio", FileUnreadableError, "file-unreadable"),
        ("permission", FileUnreadableError, "file-unreadable"),
        ("missing", KeyInvalidError, "key-invalid"),
        ("folder", KeyInvalidError, "key-invalid"),
        ("not-a-key", KeyInvalidError, "key-invalid"),
    ],
)
def test_a_key_file_that_cannot_be_read_is_file_unreadable_and_a_bad_one_key_invalid(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    loader: str,
    failure: str,
    expected: type[Exception],
    code: str,
) -> None:
    """A key file that exists but cannot be read (an I/O error, permissions) is exit 3,
    as every input file agc cannot read; one that is absent, a folder or not a key is a
    usage error (exit 2)."""
    folder = tmp_path / "trusted"
    folder.mkdir()
    path = folder / "k.pem" if loader == "trusted-folder" else tmp_path / "k.pem"
    if failure == "folder":
        path.mkdir()
    elif failure != "missing":
        path.write_bytes(b"not a key\n")
    if loader == "trusted-folder" and failure == "missing":
        path.symlink_to(tmp_path / "gone.pem")  # *.pem in the folder that names nothing
    if failure == "eio":
        _refuse_reads(monkeypatch, OSError(errno.EIO, "Input/output error"))
    elif failure == "permission":
        _refuse_opens_of(monkeypatch, path, PermissionError(errno.EACCES, "Permission denied"))
    load: Callable[[], object] = {
        "signing": lambda: load_signing_key(path),
        "trusted": lambda: load_trusted_keys([path]),
        "trusted-folder": lambda: load_trusted_keys(folder=folder),
    }[loader]
    with pytest.raises(expected) as caught:
        load()
    error = caught.value
    assert isinstance(error, AgcError)
    assert error.code == code
    assert error.exit_code == (3 if code == "file-unreadable" else 2)
    assert str(path) in error.message


def _in_time(load: Callable[[], object], seconds: float = 20) -> BaseException | None:
    """Run ``load`` in a daemon thread; what it raised (``None``: it returned). Fails the
    test when it is still running after ``seconds`` (a wait on a FIFO for ever)."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            load()
        except BaseException as exc:  # handed to the test
            raised.append(exc)
        else:
            raised.append(None)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        pytest.fail(f"loading the key still waits after {seconds} s")
    return raised[0]


def _special(path: Path, kind: str) -> str:
    """Put ``kind`` ("fifo", "device", "socket") at ``path``; what messages call it."""
    if kind == "fifo":
        os.mkfifo(path)
        return "a FIFO"
    if kind == "device":
        path.symlink_to("/dev/null")  # symlinks are followed: the device is what is read
        return "a character device"
    server = socket.socket(socket.AF_UNIX)
    cwd = Path.cwd()
    os.chdir(path.parent)  # a socket path is short: bind the name, not the tmp path
    try:
        server.bind(path.name)
    finally:
        os.chdir(cwd)
    server.close()
    return "a socket"


@pytest.mark.parametrize("kind", ["fifo", "device", "socket"])
def test_a_fifo_device_or_socket_in_the_trusted_key_folder_fails_the_load_never_waited_on(
    tmp_path: Path, keys: dict[str, Path], kind: str
) -> None:
    """A FIFO named x.pem in $AGC_TRUSTED_KEYS (nobody writes it) made every verifier
    wait on open() for ever. Opened without blocking and refused as no regular file:
    key-invalid (exit 2), naming the entry, as any other *.pem there that holds no
    public key fails the load (only a private key is skipped)."""
    folder = tmp_path / "trusted"
    folder.mkdir()
    shutil.copy(keys["public"], folder / "good.pub.pem")
    entry = folder / "x.pem"
    name = _special(entry, kind)
    error = _in_time(lambda: load_trusted_keys(folder=folder))
    assert isinstance(error, KeyInvalidError), error
    assert (error.code, error.exit_code) == ("key-invalid", 2)
    assert str(entry) in error.message
    assert f"not a regular file: {name}" in error.message
    assert error.hint is not None
    assert "x.pem" in error.hint


@pytest.mark.parametrize("loader", ["trusted", "signing"])
@pytest.mark.parametrize("kind", ["fifo", "device", "socket"])
def test_a_named_key_that_is_no_regular_file_is_key_invalid_never_a_hang(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, loader: str, kind: str
) -> None:
    """--trusted-key / --signing-key / $AGC_SIGNING_KEY naming a device or a socket is
    refused at once; a FIFO is read as a pipe (`<(vault read …)`) for a bounded time,
    and one that nobody writes is key-invalid then, never waited on for ever."""
    monkeypatch.setattr(signing_module, "KEY_PIPE_SECONDS", 0.3)
    path = tmp_path / "k.pem"
    name = _special(path, kind)
    load = load_public_key if loader == "trusted" else load_signing_key
    started = time.monotonic()
    error = _in_time(lambda: load(path))
    assert isinstance(error, KeyInvalidError), error
    assert (error.code, error.exit_code) == ("key-invalid", 2)
    assert str(path) in error.message
    assert f"not a regular file: {name}" in error.message
    assert time.monotonic() - started < 10


def test_a_trusted_key_folder_reads_each_entry_once(
    tmp_path: Path, keys: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The folder entry is judged on the bytes it read: no second open, in which a
    FIFO swapped in since would be read with the named-file rule."""
    folder = tmp_path / "trusted"
    folder.mkdir()
    shutil.copy(keys["public"], folder / "a.pem")
    shutil.copy(keys["private"], folder / "b.pem")
    opened: list[str] = []
    real_open = os.open

    def counting_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", counting_open)
    assert len(load_trusted_keys(folder=folder)) == 1
    assert sorted(p for p in opened if p.startswith(str(folder))) == [
        str(folder / "a.pem"),
        str(folder / "b.pem"),
    ]
