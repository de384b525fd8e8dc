"""agc._core.jsonl: the writer is composed of a Stamp and a SealPolicy passed in.

What is tested here is the composition itself: when the writer calls its policy, what
a refusal at each point leaves on disk, and that no writer in agc customizes the
machinery by overriding it (the behaviour of the writers is tested in
tests/integrity/test_writer*.py and tests/ledger/test_writer.py).
"""

from __future__ import annotations

import inspect
import os
from collections import UserDict
from pathlib import Path

import pytest

from agc._core.digest import Algorithm, new_hasher
from agc._core.jsonl import (
    AS_GIVEN,
    FileSeal,
    JsonlFileWriter,
    Prefix,
    SeqStamp,
    SidecarSeal,
    read_prefix,
)
from agc.errors import (
    ArtifactSealedError,
    RecordInvalidError,
    RunLockedError,
    TornTailError,
    UsageError,
)
from agc.integrity import JsonlWriter, ToolEventWriter, TranscriptWriter
from agc.ledger._writer import TurnLedgerFile

REACHES_INSIDE = {
    "agc.ledger._writer": "the turn file writer, one of the JSONL writers the base class serves",
}


class _RefusedError(UsageError):
    code = "refused-by-test"


class RecordingPolicy:
    """A seal policy that records what the writer asked and when."""

    def __init__(self, *, refuse_at: str | None = None, algorithm: Algorithm | None = None):
        self.calls: list[tuple[str, object]] = []
        self.refuse_at = refuse_at
        self.algorithm = algorithm

    def describe(self, path: Path) -> str:
        return f"test file {path.name}"

    def before_open(self, path: Path) -> None:
        self.calls.append(("before_open", path.exists()))
        if self.refuse_at == "before_open":
            raise _RefusedError("no")

    def adopt(self, fd: int, path: Path, algorithm: Algorithm) -> Prefix:
        # The file is open and locked: a second writer cannot take it meanwhile.
        with pytest.raises(RunLockedError, match=r"test file x\.jsonl is already open"):
            JsonlFileWriter(path, seal_policy=RecordingPolicy())
        self.calls.append(("adopt", (path.exists(), algorithm)))
        if self.refuse_at == "adopt":
            raise _RefusedError("no")
        return read_prefix(fd, self.algorithm or algorithm)

    def publish(self, seal: FileSeal) -> None:
        self.calls.append(("publish", seal))


def test_the_policy_is_called_before_open_at_adopt_and_at_publish(tmp_path: Path) -> None:
    path = tmp_path / "new" / "x.jsonl"
    policy = RecordingPolicy()
    writer = JsonlFileWriter(path, seal_policy=policy)
    assert policy.calls == [("before_open", False), ("adopt", (True, "blake3"))]
    writer.write({"a": 1})
    seal = writer.finish()
    assert policy.calls[-1] == ("publish", seal)
    assert seal.records == 1
    assert not seal.sidecar.exists()  # the policy writes the seal, not the writer


def test_a_refusal_before_open_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "new" / "x.jsonl"
    with pytest.raises(_RefusedError):
        JsonlFileWriter(path, seal_policy=RecordingPolicy(refuse_at="before_open"))
    assert not path.parent.exists()


def test_a_refusal_at_adopt_releases_the_file(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    descriptors = len(os.listdir("/proc/self/fd"))
    with pytest.raises(_RefusedError):
        JsonlFileWriter(path, seal_policy=RecordingPolicy(refuse_at="adopt"))
    assert len(os.listdir("/proc/self/fd")) == descriptors
    JsonlFileWriter(path).abort()  # the lock was released


def test_the_prefix_decides_the_algorithm_and_the_position(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a":1}\n{"a":2}\n')
    writer = JsonlFileWriter(path, seal_policy=RecordingPolicy(algorithm="sha256"))
    assert (writer.algorithm, writer.next_seq, writer.bytes_written) == ("sha256", 2, 16)
    writer.write({"a": 3})
    seal = writer.finish()
    hasher = new_hasher("sha256")
    hasher.update(path.read_bytes())
    assert seal.digest == hasher.hexdigest()
    assert seal.sidecar.name == "x.jsonl.sha256"


def test_read_prefix_reports_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(b'{"a":1}\n{"a"')
    fd = os.open(path, os.O_RDONLY)
    try:
        prefix = read_prefix(fd, "blake3")
    finally:
        os.close(fd)
    assert (prefix.bytes, prefix.records, prefix.ends_with_newline) == (12, 1, False)
    with pytest.raises(TornTailError):
        JsonlFileWriter(path)


def test_the_default_policy_refuses_a_sealed_file_and_reseal_continues_it(
    tmp_path: Path,
) -> None:
    path = tmp_path / "x.jsonl"
    with JsonlFileWriter(path) as writer:
        writer.write({"a": 1})
    with pytest.raises(ArtifactSealedError):
        JsonlFileWriter(path, seal_policy=SidecarSeal())
    with JsonlFileWriter(path, seal_policy=SidecarSeal(reseal=True)) as again:
        assert again.next_seq == 1


# -- stamps ---------------------------------------------------------------------------------


def test_as_given_writes_any_mapping_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    with JsonlFileWriter(path, stamp=AS_GIVEN) as writer:
        writer.write(UserDict({"seq": "mine", "ts": 1}))
    assert path.read_bytes() == b'{"seq":"mine","ts":1}\n'


def test_seq_stamp_puts_its_fields_first_and_guards_them(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    stamp = SeqStamp(lambda: 7, {"run_id": "r1"})
    assert stamp.reserved == {"seq", "ts", "run_id"}
    with JsonlFileWriter(path, stamp=stamp) as writer:
        writer.write({"tool": "bash"})
        writer.write({"run_id": "r1", "x": None})  # its own, equal run_id: kept in place
        with pytest.raises(RecordInvalidError, match="reserved key"):
            writer.write({"ts": 1})
        with pytest.raises(RecordInvalidError, match="run_id 'r2' but the writer is for 'r1'"):
            writer.write({"run_id": "r2", "x": None})
    assert path.read_bytes() == (
        b'{"seq":0,"ts":7,"run_id":"r1","tool":"bash"}\n{"seq":1,"ts":7,"run_id":"r1","x":null}\n'
    )


# -- composition, not inheritance hooks -------------------------------------------------


@pytest.mark.parametrize(
    "writer_class", [JsonlWriter, TranscriptWriter, ToolEventWriter, TurnLedgerFile]
)
def test_no_writer_overrides_the_machinery(writer_class: type[JsonlFileWriter]) -> None:
    base = {
        name
        for name, member in inspect.getmembers(JsonlFileWriter)
        if (inspect.isfunction(member) or isinstance(member, property))
        and not (name.startswith("__") and name.endswith("__"))
    }
    assert {"write", "finish", "_encode", "_seal_on_exit"} <= base
    overridden = {
        name
        for klass in writer_class.__mro__[: writer_class.__mro__.index(JsonlFileWriter)]
        for name in vars(klass)
        if name in base
    }
    assert overridden == set()
