"""An empty input to ``agc record``/``agc import`` into a store written object by object,
under interrupts, failing uploads and ``--allow-empty``, on the in-memory bucket (S3's own
behaviour is the store contract's, tests/_core/test_store_contract.py)."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest

from agc._core.memstore import MemoryStore
from agc.cli.app import main as agc_main
from agc.cli.verify_main import main as verify_main
from agc.errors import StoreError
from agc.integrity import _target, _upload
from agc.integrity._upload import staging_store
from tests.conftest import feed_stdin

REACHES_INSIDE = {
    "agc.integrity._target": "swaps the target's upload step to fail it",
    "agc.integrity._upload": "the real upload step and the staging folder",
}

_TRANSCRIPT = b'{"type":"thread.started"}\n'


class _Interrupted(io.RawIOBase):
    """A standard input that is stopped by Ctrl-C before its first byte."""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        raise KeyboardInterrupt


@pytest.mark.parametrize("kind", ["transcript", "tool-events"])
def test_ctrl_c_before_the_first_byte_leaves_nothing_and_the_id_free(
    bucket: MemoryStore, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(_Interrupted())))
    argv = ["--run-id", "r1", "--store", bucket.url, "--kind", kind]
    assert agc_main(["record", *argv]) == 130
    assert list(bucket.list_paths("")) == []
    assert not staging_store(bucket, "r1").exists()
    feed_stdin(monkeypatch, _TRANSCRIPT)
    assert agc_main(["record", *argv]) == 0


@pytest.mark.parametrize("how", ["record", "import"])
def test_an_empty_input_with_a_failing_upload_is_still_refused_first(
    bucket: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Any,
    capsys: pytest.CaptureFixture[str],
    how: str,
) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("upload refused")

    monkeypatch.setattr(_target, "upload_run", fail)
    argv = ["--run-id", "r1", "--store", bucket.url]
    if how == "record":
        feed_stdin(monkeypatch, b"")
        code = agc_main(["record", *argv])
    else:
        empty = tmp_path / "e.jsonl"
        empty.write_bytes(b"")
        code = agc_main(["import", str(empty), *argv])
    assert code == 2
    assert "the input is empty" in capsys.readouterr().err
    assert not staging_store(bucket, "r1").exists()
    assert list(bucket.list_paths("")) == []


def test_allow_empty_with_a_failing_upload_stays_staged_then_recovers_incomplete(
    bucket: MemoryStore, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = _upload.upload_run

    def fail(*args: Any, **kwargs: Any) -> Any:
        raise StoreError("upload refused")

    monkeypatch.setattr(_target, "upload_run", fail)
    feed_stdin(monkeypatch, b"")
    argv = ["--run-id", "r1", "--store", bucket.url]
    assert agc_main(["record", *argv, "--allow-empty"]) == 3
    assert staging_store(bucket, "r1").exists()
    assert list(bucket.list_paths("")) == []
    monkeypatch.setattr(_target, "upload_run", real)
    capsys.readouterr()
    assert agc_main(["recover", "r1", "--store", bucket.url]) == 0
    assert not staging_store(bucket, "r1").exists()
    assert verify_main(["r1", "--store", bucket.url]) == 1
    assert verify_main(["--all", "--store", bucket.url]) == 1


@pytest.mark.parametrize("kind", ["transcript", "tool-events"])
def test_allow_empty_uploads_a_run_that_never_verifies_as_complete(
    bucket: MemoryStore,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    feed_stdin(monkeypatch, b"")
    argv = ["--run-id", "r1", "--store", bucket.url, "--kind", kind, "--allow-empty", "--json"]
    assert agc_main(["record", *argv]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["records"] == 0
    assert "audit/manifests/r1.json" in summary["object_store"]["uploaded"]
    assert not staging_store(bucket, "r1").exists()
    assert verify_main(["r1", "--store", bucket.url, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] is False
    assert verify_main(["--all", "--store", bucket.url, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["complete"] is False
