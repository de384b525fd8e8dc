"""Sealed readiness verdicts (:mod:`agc.flows`), called as a library: a verdict sealed
as an agc run verifies and checks back for its environment; a changed, unsigned or
taken run is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from agc.errors import FileExistsRefusedError, RunIdInvalidError
from agc.flows import (
    StoreLayout,
    check_sealed_verdict,
    refuse_taken_run_id,
    seal_verdict,
    verdict_statement,
)
from agc.integrity import (
    check_run,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
    read_run_manifest,
)
from agc.readiness import (
    PREDICATE_TYPE,
    ReadinessConfig,
    canonical_digest,
    classify,
    stored_observation,
)
from tests.readiness.helpers import LIVE_URL, completed, observation


def _seal(store: Path, run_id: str = "ready-1", key_dir: Path | None = None) -> dict[str, object]:
    obs = observation(completed())
    stored = stored_observation(obs)
    key = load_signing_key(generate_keypair(key_dir)[0]) if key_dir is not None else None
    statement, summary = seal_verdict(
        run_id,
        store=store,
        signing_key=key,
        verdict=classify(obs),
        config=ReadinessConfig(),
        subject=stored,
        observation=stored,
    )
    assert statement["predicateType"] == PREDICATE_TYPE
    return summary


def test_a_sealed_verdict_verifies_and_checks_back(tmp_path: Path) -> None:
    store = tmp_path / "store"
    summary = _seal(store)
    assert summary["run_id"] == "ready-1"
    assert summary["signed"] is False
    assert summary["store"] == str(store)
    assert check_run("ready-1", store).complete
    manifest = read_run_manifest("ready-1", store)
    assert manifest is not None
    assert manifest.attributes["readiness"]["passed"] is True  # type: ignore[index]
    checked = check_sealed_verdict("ready-1", store, environment="dev", endpoint=LIVE_URL)
    assert checked.run.complete
    assert checked.evidence is not None
    assert checked.evidence.ok, checked.evidence.problems


def test_a_verdict_for_another_environment_is_a_finding(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _seal(store)
    checked = check_sealed_verdict("ready-1", store, environment="prod")
    assert checked.evidence is not None
    assert not checked.evidence.ok
    assert [code for code, _ in checked.evidence.problems] == ["environment-mismatch"]


def test_a_changed_run_is_not_read_as_evidence(tmp_path: Path) -> None:
    store = tmp_path / "store"
    _seal(store)
    path = StoreLayout(store).artifact_path("ready-1", "transcript")
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit of a record
    path.write_bytes(bytes(data))
    checked = check_sealed_verdict("ready-1", store, environment="dev")
    assert not checked.run.complete
    assert checked.evidence is None


def test_a_signed_verdict_checks_with_its_key_and_an_unsigned_one_does_not(
    tmp_path: Path,
) -> None:
    store = tmp_path / "store"
    summary = _seal(store, "signed-1", key_dir=tmp_path / "keys")
    assert summary["signed"] is True
    keys = load_trusted_keys([tmp_path / "keys"])
    signed = check_sealed_verdict(
        "signed-1", store, environment="dev", trusted_keys=keys, require_signature=True
    )
    assert signed.evidence is not None
    assert signed.evidence.ok
    _seal(store, "unsigned-1")
    unsigned = check_sealed_verdict("unsigned-1", store, environment="dev", require_signature=True)
    assert not unsigned.run.complete
    assert unsigned.evidence is None


def test_a_taken_or_bad_run_id_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    store = tmp_path / "store"
    refuse_taken_run_id("ready-1", store)  # free
    _seal(store)
    with pytest.raises(FileExistsRefusedError):
        refuse_taken_run_id("ready-1", store)
    with pytest.raises(RunIdInvalidError):
        refuse_taken_run_id("../escape", store)


def test_the_statement_digests_its_subject(tmp_path: Path) -> None:
    del tmp_path
    obs = observation(completed())
    stored = stored_observation(obs)
    statement = verdict_statement(classify(obs), ReadinessConfig(), stored)
    digests = [subject["digest"] for subject in statement["subject"]]
    assert any(canonical_digest(stored) in digest.values() for digest in digests)
