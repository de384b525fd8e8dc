"""Parsing evidence: hostile JSON in any evidence file is a finding, never a pass and
never an internal error (exit 4).

The class of attack: someone who can write the store puts JSON that parsers read
differently (a duplicate member: first-wins readers and last-wins readers disagree) or
that breaks a careless reader (nesting a million levels deep, a lone surrogate that
cannot be printed as UTF-8, NaN, a 5000-digit number, invalid UTF-8) into a manifest,
a chain line, the chain head, a checkpoint or a sidecar.
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agc.cli import verify as verify_cli
from agc.cli import verify_main
from agc.exitcodes import ExitCode
from agc.integrity import (
    TranscriptWriter,
    check_run,
    check_store,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
)
from tests.conftest import examples
from tests.integrity.evidence_helpers import write_run

# Values no reader may accept or crash on, as JSON text.
HOSTILE_VALUES: dict[str, bytes] = {
    "deep-arrays": b"[" * 100_000 + b"]" * 100_000,
    "deep-objects": b'{"a":' * 50_000 + b"0" + b"}" * 50_000,
    "just-too-deep": b"[" * 600 + b"]" * 600,
    "lone-surrogate": b'"\\ud800 tail"',
    "lone-surrogate-low": b'"\\udfff"',
    "nan": b"NaN",
    "infinity": b"-Infinity",
    "overflow": b"1e400",
    "digits": b"9" * 5000,
}
# Whole files that are not strict JSON.
HOSTILE_FILES: dict[str, bytes] = {
    **HOSTILE_VALUES,
    "invalid-utf8": b'{"a": "\xff\xfe"}',
    "bom": b'\xef\xbb\xbf{"position": 1}',
    "empty": b"",
    "truncated": b'{"position": 1, "dig',
}


def _run_store(root: Path, *, unsealed: bool = False) -> Path:
    store = root / "store"
    store.mkdir()
    write_run(store, "r1", count=3)
    write_run(store, "r2", count=2)
    if unsealed:
        writer = TranscriptWriter("r3", store=store, checkpoint_records=1, buffer_bytes=0)
        writer.write({"a": 1})
        writer.write({"a": 2})
        writer.abort()
    return store


def _with_member(document: bytes, name: str, value: bytes) -> bytes:
    """``document`` (a JSON object) with one more member whose value is raw ``value``."""
    start = document.index(b"{") + 1
    return document[:start] + json.dumps(name).encode() + b":" + value + b"," + document[start:]


def _exit_code(args: list[str]) -> int:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = verify_main.main(args)
    assert "internal error" not in err.getvalue().lower(), err.getvalue()
    # Whatever was read, the JSON output is valid UTF-8 JSON.
    if "--json" in args:
        json.loads(out.getvalue().encode("utf-8"))
    return code


# -- duplicate members ------------------------------------------------------------------


def test_a_manifest_with_a_forged_first_artifacts_member_fails_the_strictest_gate(
    tmp_path: Path,
) -> None:
    # A first-wins reader sees the forged artifacts, agc (last-wins) the real, signed
    # ones: the document means two things, so it is refused, in every mode.
    private, public, _ = generate_keypair(tmp_path / "keys")
    store = tmp_path / "store"
    store.mkdir()
    write_run(store, "r1", count=3, signing_key=load_signing_key(private))
    trusted = load_trusted_keys([public])
    head = check_store(store, trusted_keys=trusted, require_signature=True).head
    assert head is not None
    manifest = store / "audit" / "manifests" / "r1.json"
    original = json.loads(manifest.read_bytes())
    forged = json.loads(json.dumps(original["artifacts"]))
    forged["transcript"]["digest"] = "0" * 64
    manifest.write_bytes(
        _with_member(manifest.read_bytes(), "artifacts", json.dumps(forged).encode())
    )

    report = check_run("r1", store, trusted_keys=trusted, require_signature=True)
    assert not report.complete
    assert "manifest-invalid" in {f.code for f in report.findings}
    assert "duplicate key 'artifacts'" in " ".join(f.message for f in report.findings)
    strict = check_store(store, trusted_keys=trusted, require_signature=True, expect_head=head)
    assert not strict.complete
    assert _exit_code(["r1", "--store", str(store)]) == ExitCode.FINDINGS
    assert verify_cli.main(["--all", "--store", str(store), "--expect-head", head]) == (
        ExitCode.FINDINGS
    )


@pytest.mark.parametrize("where", ["entry", "signature", "chain", "segment"])
def test_a_duplicate_member_at_any_depth_of_a_manifest_is_manifest_invalid(
    tmp_path: Path, where: str
) -> None:
    store = _run_store(tmp_path)
    manifest = store / "audit" / "manifests" / "r1.json"
    document = json.loads(manifest.read_bytes())
    marker = "\x00duplicate\x00"
    entry = document["artifacts"]["transcript"]
    target: dict[str, object]
    if where == "entry":
        target = entry
    elif where == "signature":
        target = document.setdefault("signature", {"algorithm": "ed25519"})
    elif where == "chain":
        target = document["chain"]
    else:
        target = {"records": 1, "bytes": 1, "digest": "0", "sealed_at_ms": 1}
        entry["segments"].append(target)
    name = next(iter(target))
    target[marker] = target[name]
    text = json.dumps(document).replace(json.dumps(marker), json.dumps(name))
    manifest.write_text(text)
    report = check_run("r1", store)
    assert [f.code for f in report.findings if f.code == "manifest-invalid"] == ["manifest-invalid"]
    assert f"duplicate key {name!r}" in " ".join(f.message for f in report.findings)


@pytest.mark.parametrize("member", ["position", "run_id", "manifest_digest", "prev"])
def test_a_chain_line_naming_a_member_twice_is_chain_invalid(tmp_path: Path, member: str) -> None:
    store = _run_store(tmp_path)
    chain = store / "audit" / "chain.jsonl"
    lines = chain.read_bytes().splitlines(keepends=True)
    link = json.loads(lines[0])
    lines[0] = _with_member(lines[0], member, json.dumps(link[member]).encode())
    chain.write_bytes(b"".join(lines))
    report = check_store(store)
    assert not report.complete
    assert any(
        f.code == "chain-invalid" and "1 unreadable line" in f.message for f in report.findings
    )


def test_a_chain_head_naming_a_member_twice_is_chain_invalid(tmp_path: Path) -> None:
    store = _run_store(tmp_path)
    head = store / "audit" / "chain-head.json"
    # Forged first, real last: a first-wins reader pins another head.
    head.write_bytes(_with_member(head.read_bytes(), "digest", json.dumps("0" * 64).encode()))
    report = check_store(store)
    assert not report.complete
    assert "audit/chain-head.json is damaged" in {f.message for f in report.findings}


# -- any hostile value in any evidence file ----------------------------------------------

_EVIDENCE: dict[str, Callable[[Path], Path]] = {
    "manifest": lambda s: s / "audit" / "manifests" / "r1.json",
    "chain-line": lambda s: s / "audit" / "chain.jsonl",
    "chain-head": lambda s: s / "audit" / "chain-head.json",
    "checkpoint": lambda s: s / "audit" / "transcripts" / "r3.jsonl.ckpt",
    "sidecar": lambda s: s / "audit" / "transcripts" / "r1.jsonl.b3",
}


@contextlib.contextmanager
def _fresh_store() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="agc-evidence-"))
    try:
        yield _run_store(root, unsealed=True)
    finally:
        shutil.rmtree(root)


def _damage(path: Path, kind: str, placement: str, name: str) -> None:
    data = path.read_bytes()
    if placement == "whole-file":
        path.write_bytes(HOSTILE_FILES[kind])
        return
    value = HOSTILE_VALUES.get(kind, b"0")
    if path.suffix in {".jsonl", ".ckpt"}:
        lines = data.splitlines(keepends=True)
        lines[0] = _with_member(lines[0], name, value)
        path.write_bytes(b"".join(lines))
    elif path.suffix == ".b3":
        path.write_bytes(value + b"  r1.jsonl\n")
    else:
        path.write_bytes(_with_member(data, name, value))


@settings(
    max_examples=examples(120),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    evidence=st.sampled_from(sorted(_EVIDENCE)),
    kind=st.sampled_from(sorted(HOSTILE_FILES)),
    placement=st.sampled_from(["whole-file", "member"]),
    name=st.sampled_from(["x", "signature", "position", "\u2028", "artifacts"]),
    as_json=st.booleans(),
)
def test_hostile_json_in_any_evidence_file_is_a_finding_never_exit_4(
    evidence: str, kind: str, placement: str, name: str, as_json: bool
) -> None:
    with _fresh_store() as store:
        path = _EVIDENCE[evidence](store)
        _damage(path, kind, placement, name)
        extra = ["--json"] if as_json else []
        for run_id in ("r1", "r3"):
            assert _exit_code([run_id, "--store", str(store), *extra]) in {
                ExitCode.OK,
                ExitCode.FINDINGS,
            }
        # --all reads every one of these files: the store cannot pass.
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = verify_cli.main(["--all", "--store", str(store), *extra])
        assert code == ExitCode.FINDINGS, err.getvalue()
        assert "internal error" not in err.getvalue().lower()


@pytest.mark.parametrize("kind", sorted(HOSTILE_VALUES))
def test_hostile_values_in_the_manifest_are_manifest_invalid(tmp_path: Path, kind: str) -> None:
    store = _run_store(tmp_path)
    manifest = store / "audit" / "manifests" / "r1.json"
    manifest.write_bytes(_with_member(manifest.read_bytes(), "signature", HOSTILE_VALUES[kind]))
    report = check_run("r1", store)
    assert "manifest-invalid" in {f.code for f in report.findings}


def test_lone_surrogates_never_reach_the_report(tmp_path: Path) -> None:
    # A lone surrogate would make printing the report (UTF-8) fail: it is refused at
    # parsing, so every message is printable.
    store = _run_store(tmp_path)
    manifest = store / "audit" / "manifests" / "r1.json"
    data = manifest.read_bytes()
    manifest.write_bytes(b'{"\\udc00": 1,' + data[data.index(b"{") + 1 :])
    report = check_run("r1", store)
    text = json.dumps(report.to_dict(), ensure_ascii=False)
    text.encode("utf-8")
    assert "lone surrogate" in text
