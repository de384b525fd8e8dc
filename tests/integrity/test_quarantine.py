"""Tests for agc.integrity._quarantine: the quarantine file of a recovered artifact,
judged once for every store (a folder reads it from disk, an object store streams it)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agc._core.digest import digest_bytes
from agc.integrity import ArtifactSeal
from agc.integrity._quarantine import judge_quarantine

REACHES_INSIDE = {
    "agc.integrity._quarantine": "the pure quarantine judgement, without a store to read from",
}

TORN = b'{"seq": 3, "te'


def _seal(data: bytes = TORN) -> ArtifactSeal:
    quarantine = {
        "file": "r1.jsonl.quarantine",
        "bytes": len(data),
        "digest": digest_bytes(data, "blake3"),
    }
    return ArtifactSeal(
        kind="transcript",
        file="r1.jsonl",
        algorithm="blake3",
        digest="0" * 64,
        bytes=0,
        records=0,
        last_seq=None,
        sealed_at_ms=0,
        quarantine=quarantine,
    )


def test_the_recorded_bytes_pass() -> None:
    assert judge_quarantine(_seal(), (digest_bytes(TORN, "blake3"), len(TORN))) == []


def test_an_absent_quarantine_file_is_deleted() -> None:
    (finding,) = judge_quarantine(_seal(), None)
    assert (finding.code, finding.artifact) == ("deleted", "transcript")
    assert "r1.jsonl.quarantine missing" in finding.message
    assert finding.expected == {"digest": digest_bytes(TORN, "blake3"), "bytes": len(TORN)}


@given(data=st.binary(max_size=64))
def test_any_other_bytes_are_modified(data: bytes) -> None:
    observed = (digest_bytes(data, "blake3"), len(data))
    findings = judge_quarantine(_seal(), observed)
    if data == TORN:
        assert findings == []
    else:
        (finding,) = findings
        assert finding.code == "modified"
        assert finding.actual == {"digest": observed[0], "bytes": len(data)}


@given(size=st.integers(min_value=0, max_value=1 << 40))
def test_the_right_digest_with_another_length_is_modified(size: int) -> None:
    findings = judge_quarantine(_seal(), (digest_bytes(TORN, "blake3"), size))
    assert [f.code for f in findings] == ([] if size == len(TORN) else ["modified"])
