"""Signed seal records: a turn file rewritten and re-sealed without the key fails.

The attacker here can write the whole turn file and its sidecar: edit any line,
recompute every seal record's prefix digest, length and count and the sidecar. With a
trusted key, none of that passes `check`; without one, nothing is claimed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agc._core.digest import new_hasher
from agc._core.signing import SigningKey, sign_document
from agc.cli.app import main as cli_main
from agc.exitcodes import ExitCode
from agc.integrity import generate_keypair, load_signing_key, load_trusted_keys
from agc.ledger import check_turn_file
from agc.ledger._contract import RECORD_SEAL
from tests.conftest import examples
from tests.ledger.helpers import TURN_ID, command, mcp, record_turn

REACHES_INSIDE = {
    "agc.ledger._contract": "the seal record's type, to find seal records in a turn file",
}

Keys = tuple[SigningKey, Path]


def _keys(folder: Path) -> Keys:
    private, public, _ = generate_keypair(folder)
    return load_signing_key(private), public


@pytest.fixture
def keys(tmp_path: Path) -> Keys:
    return _keys(tmp_path / "keys")


@pytest.fixture
def foreign_keys(tmp_path: Path) -> Keys:
    return _keys(tmp_path / "foreign")


def _events(brief: str = "collect") -> list[dict[str, Any]]:
    return [
        command("c1", "ls", [{"type": "listFiles", "path": "assets/uploads"}]),
        mcp("m1", "taonier_prepare_game_art", {"brief": brief}),
    ]


def _signed_turn(project: Path, key: SigningKey, *, attempts: int = 2) -> Path:
    path = Path()
    for n in range(attempts):
        path = record_turn(project, _events(f"collect {n}"), signing_key=key).turn_file
    return path


def _trusted(public: Path) -> dict[str, Any]:
    return dict(load_trusted_keys([public]))


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _reseal(lines: list[bytes], path: Path, *, sign: SigningKey | None = None) -> None:
    """Rewrite ``path`` from ``lines`` as an attacker would: every seal record that
    parses gets the prefix digest, length and count of the bytes before it (its
    signature kept, or made with ``sign``), then the sidecar is rewritten."""
    out: list[bytes] = []
    hasher = new_hasher("blake3")
    total = 0
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and record.get("recordType") == RECORD_SEAL:
            record.update(
                prefixDigest=hasher.copy().hexdigest(), prefixBytes=total, prefixRecords=len(out)
            )
            if sign is not None:
                record = sign_document(record, sign)
            written = json.dumps(record, separators=(",", ":")).encode() + b"\n"
        else:
            written = line
        out.append(written)
        hasher.update(written)
        total += len(written)
    path.write_bytes(b"".join(out))
    path.with_name(path.name + ".b3").write_text(f"{hasher.hexdigest()}  {path.name}\n")


def _codes(path: Path, public: Path) -> set[str]:
    report = check_turn_file(path, trusted_keys=_trusted(public))
    return {f.code for f in report.errors}


def test_a_signed_turn_file_verifies_with_its_key_and_says_not_checked_without(
    project: Path, keys: Keys
) -> None:
    key, public = keys
    path = _signed_turn(project, key)
    seals = [json.loads(x) for x in _lines(path) if RECORD_SEAL.encode() in x]
    assert len(seals) == 2
    assert {s["signature"]["key_id"] for s in seals} == {key.key_id}
    checked = check_turn_file(path, trusted_keys=_trusted(public))
    assert checked.ok, checked.findings
    assert checked.signature == "signature-valid"
    assert checked.to_dict()["signature"] == "signature-valid"
    unchecked = check_turn_file(path)
    assert unchecked.ok
    assert unchecked.signature == "not-checked"


def test_an_unsigned_turn_file_passes_unless_a_signature_is_required(
    project: Path, keys: Keys
) -> None:
    path = record_turn(project, _events()).turn_file
    assert check_turn_file(path).signature == "unsigned"
    assert check_turn_file(path).ok
    assert _codes(path, keys[1]) == {"unsigned"}
    required = check_turn_file(path, require_signature=True)
    assert {f.code for f in required.errors} == {"unsigned"}


def test_require_signature_without_a_trusted_key_fails_a_signed_file(
    project: Path, keys: Keys
) -> None:
    report = check_turn_file(_signed_turn(project, keys[0]), require_signature=True)
    assert report.signature == "unknown-key"
    assert {f.code for f in report.errors} == {"unknown-key"}


def _edit_item_and_reseal(lines: list[bytes], path: Path) -> None:
    lines[1] = lines[1].replace(b'"ls"', b'"rm"')
    _reseal(lines, path)


def _strip_signatures(lines: list[bytes], path: Path) -> None:
    stripped = []
    for line in lines:
        record = json.loads(line)
        record.pop("signature", None)
        stripped.append(json.dumps(record, separators=(",", ":")).encode() + b"\n")
    _reseal(stripped, path)


def _append_unsealed_attempt(lines: list[bytes], path: Path) -> None:
    # A whole forged attempt (its records copied from the first) with no seal record.
    first_attempt = lines[: next(i for i, x in enumerate(lines) if RECORD_SEAL.encode() in x)]
    _reseal(lines + first_attempt, path)


def _append_attempt_with_unsigned_seal(lines: list[bytes], path: Path) -> None:
    end = next(i for i, x in enumerate(lines) if RECORD_SEAL.encode() in x) + 1
    seal = json.loads(lines[end - 1])
    seal.pop("signature")
    _reseal([*lines, *lines[: end - 1], json.dumps(seal).encode() + b"\n"], path)


def _drop_middle_seal(lines: list[bytes], path: Path) -> None:
    first_seal = next(i for i, x in enumerate(lines) if RECORD_SEAL.encode() in x)
    _reseal(lines[:first_seal] + lines[first_seal + 1 :], path)


def _seal_from_another_turn(other: Path) -> Callable[[list[bytes], Path], None]:
    def tamper(lines: list[bytes], path: Path) -> None:
        theirs = [x for x in _lines(other) if RECORD_SEAL.encode() in x]
        mine = [i for i, x in enumerate(lines) if RECORD_SEAL.encode() in x]
        for index, seal in zip(mine, theirs, strict=True):
            lines[index] = seal
        path.write_bytes(b"".join(lines))  # seal records kept as signed: not recomputed
        hasher = new_hasher("blake3")
        hasher.update(path.read_bytes())
        path.with_name(path.name + ".b3").write_text(f"{hasher.hexdigest()}  {path.name}\n")

    return tamper


@pytest.mark.parametrize(
    ("tamper", "codes"),
    [
        pytest.param(_edit_item_and_reseal, {"bad-signature"}, id="item-edited-resealed"),
        pytest.param(_strip_signatures, {"unsigned"}, id="signatures-stripped"),
        pytest.param(_append_unsealed_attempt, {"unsigned"}, id="forged-attempt-no-seal"),
        pytest.param(
            _append_attempt_with_unsigned_seal, {"unsigned"}, id="forged-attempt-unsigned-seal"
        ),
        pytest.param(_drop_middle_seal, {"bad-signature"}, id="first-seal-dropped"),
    ],
)
def test_rewriting_a_signed_turn_file_without_the_key_fails(
    project: Path, keys: Keys, tamper: Callable[[list[bytes], Path], None], codes: set[str]
) -> None:
    key, public = keys
    path = _signed_turn(project, key)
    tamper(_lines(path), path)
    found = _codes(path, public)
    assert codes <= found, found
    # Without a trusted key no signature claim is made, whatever the seal says.
    assert check_turn_file(path).signature in {"not-checked", "unsigned"}


def test_resigning_with_another_key_is_an_unknown_key(
    project: Path, keys: Keys, foreign_keys: Keys
) -> None:
    key, public = keys
    path = _signed_turn(project, key)
    lines = _lines(path)
    lines[1] = lines[1].replace(b'"ls"', b'"rm"')
    _reseal(lines, path, sign=foreign_keys[0])
    assert check_turn_file(path).ok  # the attacker's own re-seal is consistent
    assert _codes(path, public) == {"unknown-key"}


def test_signed_seals_copied_from_another_turn_file_do_not_fit(
    tmp_path: Path, project: Path, keys: Keys
) -> None:
    key, public = keys
    other_project = tmp_path / "other"
    (other_project / "assets" / "uploads").mkdir(parents=True)
    other = record_turn(other_project, _events("another brief"), signing_key=key).turn_file
    path = record_turn(project, _events(), signing_key=key).turn_file
    _seal_from_another_turn(other)(_lines(path), path)
    assert "seal-mismatch" in _codes(path, public)


def test_an_attempt_recorded_without_the_key_after_a_signed_one_fails(
    project: Path, keys: Keys
) -> None:
    key, public = keys
    record_turn(project, _events("one"), signing_key=key)
    path = record_turn(project, _events("two")).turn_file
    report = check_turn_file(path, trusted_keys=_trusted(public))
    assert [f.code for f in report.errors] == ["unsigned"]
    assert report.errors[0].line == len(_lines(path))


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(position=st.floats(0, 1, exclude_max=True), delta=st.integers(1, 255))
def test_any_byte_changed_and_resealed_never_verifies_with_the_key(
    tmp_path_factory: pytest.TempPathFactory, position: float, delta: int
) -> None:
    folder = tmp_path_factory.mktemp("turn")
    project = folder / "proj"
    (project / "assets" / "uploads").mkdir(parents=True)
    key, public = _keys(folder / "keys")
    path = _signed_turn(project, key)
    original = path.read_bytes()
    data = bytearray(original)
    index = int(position * len(data))
    data[index] = (data[index] + delta) % 256
    _reseal(bytes(data).splitlines(keepends=True), path)
    # A change inside a seal record's prefix fields is undone by the re-seal itself.
    assume(path.read_bytes() != original)
    report = check_turn_file(path, trusted_keys=_trusted(public))
    assert not report.ok
    assert report.signature != "signature-valid"


def test_cli_records_signed_and_checks_with_the_trusted_key(
    tmp_path: Path, project: Path, keys: Keys, capsys: pytest.CaptureFixture[str]
) -> None:
    public = keys[1]
    private = public.with_name("signing-key.pem")
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("make the game")
    events = tmp_path / "events.jsonl"
    events.write_text("".join(json.dumps(e) + "\n" for e in _events()))
    base = ["ledger", "record", "--project", str(project), "--turn-id", TURN_ID]
    base += ["--prompt-file", str(prompt), "--input", str(events)]
    assert cli_main([*base, "--signing-key", str(private), "--json"]) == ExitCode.OK
    turn = project / json.loads(capsys.readouterr().out)["turnLog"]
    check = ["ledger", "check", str(turn), "--trusted-key", str(public), "--json"]
    assert cli_main(check) == ExitCode.OK
    assert json.loads(capsys.readouterr().out)["signature"] == "signature-valid"
    verify = [sys.executable, "-m", "agc.cli.verify_main", "--turn-file", str(turn)]
    done = subprocess.run([*verify, "--trusted-key", str(public)], capture_output=True, check=False)
    assert done.returncode == ExitCode.OK, done.stderr
    lines = _lines(turn)
    lines[1] = lines[1].replace(b'"ls"', b'"rm"')
    _reseal(lines, turn)
    assert cli_main(check) == ExitCode.FINDINGS
    assert json.loads(capsys.readouterr().out)["signature"] == "bad-signature"
    done = subprocess.run([*verify, "--trusted-key", str(public)], capture_output=True, check=False)
    assert done.returncode == ExitCode.FINDINGS
    # Without a key the re-sealed file is consistent: the signature is what catches it.
    assert cli_main(["ledger", "check", str(turn)]) == ExitCode.OK


def _with_signature_value(path: Path, value: str) -> None:
    lines = _lines(path)
    index = next(i for i, x in enumerate(lines) if RECORD_SEAL.encode() in x)
    seal = json.loads(lines[index])
    seal["signature"]["value"] = value
    lines[index] = json.dumps(seal, separators=(",", ":")).encode() + b"\n"
    _reseal(lines, path)


def test_a_signature_whose_base64_looks_like_a_host_path_is_not_a_host_path(
    project: Path, keys: Keys
) -> None:
    # Base64 uses "/": about one signature in a few dozen holds something like "/Users/".
    path = _signed_turn(project, keys[0], attempts=1)
    looks_like_a_path = "/Users/bob/" + "A" * 75 + "=="
    _with_signature_value(path, looks_like_a_path)
    assert check_turn_file(path).ok
    assert _codes(path, keys[1]) == {"bad-signature"}


def test_a_malformed_signature_member_is_still_scanned_for_host_paths(
    project: Path, keys: Keys
) -> None:
    path = _signed_turn(project, keys[0], attempts=1)
    _with_signature_value(path, "/Users/bob/notes.txt")
    assert {f.code for f in check_turn_file(path).errors} == {"host-path"}


@pytest.fixture(scope="module")
def signed_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, Any]]:
    """One signed two-attempt turn file (its bytes) and the trust list that verifies it."""
    folder = tmp_path_factory.mktemp("signed")
    project = folder / "proj"
    (project / "assets" / "uploads").mkdir(parents=True)
    key, public = _keys(folder / "keys")
    return _signed_turn(project, key).read_bytes(), _trusted(public)


def _place(folder: Path, data: bytes) -> Path:
    """Write ``data`` as a turn file with a sidecar that matches it (as an attacker can)."""
    path = folder / f"{TURN_ID}.jsonl"
    path.write_bytes(data)
    hasher = new_hasher("blake3")
    hasher.update(data)
    path.with_name(path.name + ".b3").write_text(f"{hasher.hexdigest()}  {path.name}\n")
    return path


def _with_last_seal(data: bytes, edit: Callable[[dict[str, Any]], object]) -> bytes:
    lines = data.splitlines(keepends=True)
    seal = json.loads(lines[-1])
    edit(seal)
    return b"".join(lines[:-1]) + json.dumps(seal, separators=(",", ":")).encode() + b"\n"


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=examples(40), deadline=None)
@given(name=st.text(min_size=1, max_size=12), value=_JSON_VALUES)
def test_a_member_added_to_a_signature_is_never_verified(
    tmp_path_factory: pytest.TempPathFactory,
    signed_file: tuple[bytes, dict[str, Any]],
    name: str,
    value: object,
) -> None:
    # The signature member is outside what is signed: anything added there would be
    # carried by a file that verifies, covered by no signature.
    assume(name not in {"algorithm", "key_id", "value"})
    data, trusted = signed_file
    edited = _with_last_seal(data, lambda seal: seal["signature"].update({name: value}))
    path = _place(tmp_path_factory.mktemp("turn"), edited)
    report = check_turn_file(path, trusted_keys=trusted)
    assert report.signature == "bad-signature"
    assert "bad-signature" in {f.code for f in report.errors}


def _signature(**members: object) -> Callable[[dict[str, Any]], None]:
    """An edit of the seal's signature member: a value of ``None`` removes the member.

    The signature's ``value`` is set to fixed base64 unless given: once the member is
    malformed it is scanned for host paths, and a key's random base64 may start like
    ``/home``."""
    members = {"value": "A" * 86 + "==", **members}

    def edit(seal: dict[str, Any]) -> None:
        for name, value in members.items():
            if value is None:
                seal["signature"].pop(name)
            else:
                seal["signature"][name] = value

    return edit


@pytest.mark.parametrize(
    ("edit", "code"),
    [
        pytest.param(_signature(key_id=None), "bad-signature", id="no-key-id"),
        pytest.param(_signature(key_id=[1]), "bad-signature", id="key-id-list"),
        pytest.param(_signature(key_id=7), "bad-signature", id="key-id-number"),
        pytest.param(_signature(key_id="0" * 64), "unknown-key", id="key-id-other"),
        pytest.param(_signature(value=None), "bad-signature", id="no-value"),
        pytest.param(_signature(algorithm=None), "bad-signature", id="no-algorithm"),
        pytest.param(lambda s: s.update(note="added"), "bad-signature", id="seal-field-added"),
        pytest.param(lambda s: s.update(big=2**70), "bad-signature", id="integer-beyond-2-53"),
    ],
)
def test_a_seal_signature_member_edited_fails_with_its_code(
    tmp_path: Path,
    signed_file: tuple[bytes, dict[str, Any]],
    edit: Callable[[dict[str, Any]], object],
    code: str,
) -> None:
    data, trusted = signed_file
    report = check_turn_file(_place(tmp_path, _with_last_seal(data, edit)), trusted_keys=trusted)
    assert [f.code for f in report.errors] == [code]
    assert report.signature == code


@settings(max_examples=examples(80), deadline=None)
@given(data=st.data())
def test_signed_lines_spliced_reordered_or_repeated_never_verify(
    tmp_path_factory: pytest.TempPathFactory,
    signed_file: tuple[bytes, dict[str, Any]],
    data: st.DataObject,
) -> None:
    # Whole lines of a signed file, put together again in any order, any number of times,
    # the sidecar rewritten to match, and no seal record recomputed: a signed seal record
    # vouches only for the bytes it was signed after.
    original, trusted = signed_file
    lines = original.splitlines(keepends=True)
    picked = data.draw(st.lists(st.integers(0, len(lines) - 1), min_size=0, max_size=14))
    spliced = b"".join(lines[i] for i in picked)
    seal_ends = [i + 1 for i, line in enumerate(lines) if RECORD_SEAL.encode() in line]
    # Whole attempts cut off after a signed seal record: documented as undetected.
    assume(spliced not in {b"".join(lines[:end]) for end in seal_ends})
    report = check_turn_file(_place(tmp_path_factory.mktemp("turn"), spliced), trusted_keys=trusted)
    assert not report.ok
    assert report.signature != "signature-valid", report.findings


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda lines: [lines[-1]], id="a-signed-seal-alone"),
        pytest.param(lambda lines: [*lines, lines[-1]], id="last-seal-twice"),
        pytest.param(lambda lines: [b"\xef\xbb\xbf" + lines[0], *lines[1:]], id="byte-order-mark"),
        pytest.param(lambda lines: [lines[0], *lines[2:]], id="item-removed-not-resealed"),
        pytest.param(lambda lines: [*lines[:2], lines[1], *lines[2:]], id="item-repeated"),
    ],
)
def test_a_signed_seal_over_other_bytes_is_a_bad_signature(
    tmp_path: Path, signed_file: tuple[bytes, dict[str, Any]], build: Callable[..., list[bytes]]
) -> None:
    original, trusted = signed_file
    data = b"".join(build(original.splitlines(keepends=True)))
    report = check_turn_file(_place(tmp_path, data), trusted_keys=trusted)
    assert report.signature == "bad-signature"
    assert {"seal-mismatch", "bad-signature"} <= {f.code for f in report.errors}


def test_a_file_with_no_attempt_is_never_signature_valid(tmp_path: Path, keys: Keys) -> None:
    # Even a seal record signed by the trusted key over exactly the bytes before it
    # (none) signs no attempt.
    key, public = keys
    empty = new_hasher("blake3").hexdigest()
    seal = {"recordType": RECORD_SEAL, "clientTurnId": TURN_ID, "attempt": 1}
    seal |= {"algorithm": "blake3", "prefixBytes": 0, "prefixRecords": 0, "prefixDigest": empty}
    line = json.dumps(sign_document(seal, key), separators=(",", ":")).encode() + b"\n"
    report = check_turn_file(_place(tmp_path, line), trusted_keys=_trusted(public))
    assert "seal-mismatch" not in {f.code for f in report.findings}
    assert report.signature == "unsigned"
    assert {"no-turn-start", "unsigned"} <= {f.code for f in report.errors}
