"""Reading a turn file back, and checking it: ``agc ledger show`` / ``check``.

:func:`read_turn_file` is the only I/O: it streams the file once, hashing as it goes,
so each ``direct.codex.seal`` record can be compared with the digest of the bytes
before it. :func:`judge_turn_file` is pure. :func:`check_turn_file` returns a
:class:`LedgerReport` and never raises on findings; :func:`verify_turn_file` raises.

Finding codes (stable; docs/ledger.md):

=====================  ===================================================================
``unsealed``           no checksum sidecar
``sidecar-invalid``    the sidecar is malformed or names another file
``modified``           the file's digest differs from its sidecar
``extended``           records were appended after the last seal
``torn-tail``          the last line is unterminated
``record-invalid``     a line is not a JSON object
``no-turn-start``      no ``turn_start``: not a turn file
``orphan-records``     records before the first ``turn_start``
``seal-mismatch``      a seal record's digest, length or count is not the prefix's
``turn-id-mismatch``   a record's ``clientTurnId`` is not the file's
``seq-invalid``        item ``seq`` is not 1, 2, 3 … within an attempt
``too-many-items``     more than 256 items in an attempt
``turn-end-mismatch``  ``turn_end`` differs from the one recomputed from the records
``forbidden-field``    a key the ledger never writes (output, result, diff, content …)
``host-path``          a path field that is not a clean project-relative path, or a
                       command or text field holding a host path (any spelling)
``attempt-unsealed``   (warning) an attempt has no seal record (it was interrupted)
``turn-end-missing``   (warning) an attempt has no ``turn_end`` (it was interrupted)
``policy-mismatch``    (warning) ``turn_start`` names another policy than the check's
``bad-signature``      (signatures required) a seal record's signature does not verify,
                       or it does but the bytes before the record are not those it signed
``unknown-key``        (signatures required) a seal record is signed by an untrusted key
``unsigned``           (signatures required) a seal record has no signature, lines after
                       the last seal record (or the whole file) are not signed, or the
                       file holds no attempt
=====================  ===================================================================
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Final, Literal, TypeAlias, get_args

from agc._core import json as strict_json
from agc._core.digest import ALGORITHMS, Algorithm, digests_equal, new_hasher
from agc._core.fs import open_regular_file
from agc._core.report import Finding, Report
from agc._core.sidecar import Sidecar, read_sidecars
from agc._core.signature_rule import KEY_ID_PATTERN, judge_trust
from agc.errors import (
    FileUnreadableError,
    InputError,
    InputMissingError,
    JsonInvalidError,
    LedgerInvalidError,
    StoreError,
    UnsafePathError,
    VerificationError,
)
from agc.ledger._classify import (
    Attempt,
    TurnSummary,
    derive_turn_end,
    split_attempts,
    summarize_attempt,
)
from agc.ledger._contract import FORBIDDEN_KEYS, MAX_ITEMS, RECORD_SEAL
from agc.ledger._guard import host_path_fields
from agc.ledger._lines import MAX_READ_LINE_BYTES, iter_line_pieces
from agc.ledger._policy import LedgerPolicy, default_policy, preset_for_digest
from agc.ledger._sanitize import PathSanitizer

if TYPE_CHECKING:  # cryptography is imported only when signatures are checked
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

SignatureVerdict = Literal[
    "signature-valid", "bad-signature", "unknown-key", "unsigned", "not-checked"
]
"""A turn file's signature state: ``signature-valid`` (every seal record verifies with
a trusted key and matches the bytes before it, the last one closes the file, and the
file holds an attempt), one of the three finding codes, or,
when signatures are not required, ``not-checked`` (signed) or ``unsigned``."""

__all__ = [
    "FORBIDDEN_KEYS",
    "LedgerFile",
    "LedgerFinding",
    "LedgerFindingCode",
    "LedgerReport",
    "check_turn_file",
    "judge_turn_file",
    "read_turn_file",
    "show_turn_file",
    "verify_turn_file",
]

LedgerFindingCode = Literal[
    "unsealed",
    "sidecar-invalid",
    "modified",
    "extended",
    "torn-tail",
    "record-invalid",
    "no-turn-start",
    "orphan-records",
    "seal-mismatch",
    "turn-id-mismatch",
    "seq-invalid",
    "too-many-items",
    "turn-end-mismatch",
    "forbidden-field",
    "host-path",
    "attempt-unsealed",
    "turn-end-missing",
    "policy-mismatch",
    "bad-signature",
    "unknown-key",
    "unsigned",
]
"""The codes of a turn-file report (documented in ``docs/ledger.md``)."""

_PATH_KEYS: Final = frozenset({"path", "localPath", "movePath", "outputPath"})
_DERIVED: Final = ("itemCount", "itemsTruncated", "offeredRead", "firstDesign")


@dataclass(frozen=True)
class SealCheck:
    """One seal record and what the bytes before it hash to."""

    line: int
    record: Mapping[str, Any]
    actual_digest: str | None
    actual_bytes: int
    actual_records: int


@dataclass(frozen=True)
class LedgerFile:
    """A turn file as read from disk.

    Attributes:
        path: the file.
        records: ``(line number, record)`` for every line that is a JSON object.
        invalid_lines: line numbers of lines that are not (or are too long to read).
        long_lines: those of them longer than :data:`MAX_READ_LINE_BYTES` (not parsed).
        bytes: file length; ``ends_with_newline``: False for a torn tail.
        digests: the whole file's digest by algorithm.
        seals: each seal record with the digest of the bytes before it.
        seal_ends: digest of the file up to and including each seal line, by algorithm.
        sidecars: parsed sidecars (or the error text) by algorithm.
    """

    path: Path
    records: tuple[tuple[int, Mapping[str, Any]], ...]
    invalid_lines: tuple[int, ...]
    bytes: int
    ends_with_newline: bool
    digests: Mapping[Algorithm, str]
    seals: tuple[SealCheck, ...]
    seal_ends: Mapping[Algorithm, tuple[str, ...]]
    sidecars: Mapping[Algorithm, Sidecar | str] = field(default_factory=dict)
    long_lines: tuple[int, ...] = ()


LedgerFinding: TypeAlias = Finding[LedgerFindingCode]
"""One problem (or, for warnings, one fact worth knowing) in a turn file: a
:class:`~agc._core.report.Finding` with the ``attempt`` and ``line`` it is about."""

_FINDING_KEYS: Final = ("code", "severity", "message", "attempt", "line")


@dataclass(frozen=True)
class LedgerReport(Report[LedgerFindingCode]):
    """The verdict on one turn file: ``ok`` when there is no error finding."""

    CODES = frozenset(get_args(LedgerFindingCode))

    path: str
    findings: tuple[LedgerFinding, ...]
    attempts: int
    records: int
    bytes: int
    algorithm: str | None
    digest: str | None
    signature: SignatureVerdict = "unsigned"

    @property
    def ok(self) -> bool:
        """True when the turn file has no error finding."""
        return not self.errors

    def _members(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "ok": self.ok,
            "attempts": self.attempts,
            "records": self.records,
            "bytes": self.bytes,
            "algorithm": self.algorithm,
            "digest": self.digest,
            "signature": self.signature,
            "findings": [f.to_dict(_FINDING_KEYS) for f in self.findings],
        }


# -- reading (I/O) ------------------------------------------------------------------------


def read_turn_file(path: Path) -> LedgerFile:
    """Read and hash a turn file in one pass (memory: the parsed records; a line longer
    than :data:`MAX_READ_LINE_BYTES` is hashed in pieces, never read whole).

    Raises:
        InputMissingError: the file does not exist (exit 2, as for every named input).
        InputError: it is a folder (exit 2).
        FileUnreadableError: it cannot be read (exit 3).
        StoreError: it is a symlink (not followed), not a regular file (a FIFO), or a
            sidecar beside it is unreadable (:mod:`agc._core.sidecar`: an unusable
            sidecar is a finding, one agc cannot read is exit 3).
    """
    if path.is_dir() and not path.is_symlink():
        raise InputError(f"{path} is a folder, not a turn file", hint="Name a turn file.")
    try:
        handle = open_regular_file(path)
    except UnsafePathError as exc:
        raise StoreError(
            f"{path} is a symlink; not followed", hint="Name the turn file itself."
        ) from exc
    except FileNotFoundError as exc:
        raise InputMissingError(
            f"turn file {path} does not exist",
            hint="Name an existing turn file: .agent/runtime/direct-codex/turns/<id>.jsonl",
        ) from exc
    with handle:
        try:
            return _read(path, handle)
        except OSError as exc:
            raise FileUnreadableError(f"cannot read {path}: {exc.strerror}") from exc


def _read(path: Path, handle: BinaryIO) -> LedgerFile:
    hashers = {a: new_hasher(a) for a in ALGORITHMS}
    records: list[tuple[int, Mapping[str, Any]]] = []
    invalid: list[int] = []
    too_long: list[int] = []
    seals: list[SealCheck] = []
    seal_ends: dict[Algorithm, list[str]] = {a: [] for a in ALGORITHMS}
    total = 0
    last = b"\n"
    number = 0
    for raw, whole, first in iter_line_pieces(handle):
        if first:
            number += 1
        if not whole:  # a line too long to be a record: hashed, never parsed
            if first:
                invalid.append(number)
                too_long.append(number)
            for hasher in hashers.values():
                hasher.update(raw)
            total += len(raw)
            last = raw[-1:]
            continue
        record = _parse(raw)
        if record is None:
            invalid.append(number)
        else:
            records.append((number, record))
            if record.get("recordType") == RECORD_SEAL:
                algorithm = record.get("algorithm")
                digest = hashers[algorithm].hexdigest() if algorithm in hashers else None
                seals.append(SealCheck(number, record, digest, total, number - 1))
        for hasher in hashers.values():
            hasher.update(raw)
        total += len(raw)
        last = raw[-1:]
        if record is not None and record.get("recordType") == RECORD_SEAL:
            for algorithm, hasher in hashers.items():
                seal_ends[algorithm].append(hasher.hexdigest())
    return LedgerFile(
        path=path,
        records=tuple(records),
        invalid_lines=tuple(invalid),
        long_lines=tuple(too_long),
        bytes=total,
        ends_with_newline=last == b"\n",
        digests={a: h.hexdigest() for a, h in hashers.items()},
        seals=tuple(seals),
        seal_ends={a: tuple(v) for a, v in seal_ends.items()},
        sidecars=read_sidecars(path),
    )


def _parse(raw: bytes) -> Mapping[str, Any] | None:
    try:
        value = strict_json.loads(raw)
    except JsonInvalidError:  # not JSON, a duplicate key, NaN, too deep, lone surrogate
        return None
    return value if isinstance(value, dict) else None


# -- judging (pure) -------------------------------------------------------------------------


def judge_turn_file(
    ledger: LedgerFile,
    policy: LedgerPolicy | None = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
) -> LedgerReport:
    """Every finding for ``ledger`` (see the module docstring). No I/O.

    ``policy`` recomputes every attempt's ``turn_end``; ``None`` takes, per attempt,
    the preset its ``policySha256`` names, else the default preset.

    Signatures are required when ``trusted_keys`` holds a key or ``require_signature``
    is set: then every seal record must carry an Ed25519 signature (key id: hex
    SHA-256 of the raw public key) that verifies with a trusted key, and the last
    line of the file must be a seal record, so that every byte is covered by a
    signature (each seal record holds the digest of every byte before it).
    """
    findings: list[LedgerFinding] = []
    algorithm, digest = _judge_seal(ledger, findings)
    long_lines = set(ledger.long_lines)
    for line in ledger.invalid_lines:
        message = (
            f"line {line} is longer than {MAX_READ_LINE_BYTES} bytes: no ledger record is"
            if line in long_lines
            else f"line {line} is not a JSON object"
        )
        findings.append(Finding("record-invalid", message, line=line))
    attempts, orphans = split_attempts(record for _, record in ledger.records)
    if not attempts:
        findings.append(Finding("no-turn-start", "the file has no turn_start record"))
    if orphans:
        findings.append(
            Finding("orphan-records", f"{orphans} record(s) come before the first turn_start")
        )
    turn_id = ledger.path.name.removesuffix(".jsonl")
    lines = {id(record): line for line, record in ledger.records}
    for line, record in ledger.records:
        if record.get("clientTurnId") != turn_id:
            findings.append(
                Finding(
                    "turn-id-mismatch",
                    f"line {line} has clientTurnId {record.get('clientTurnId')!r}, not {turn_id!r}",
                    line=line,
                )
            )
        findings.extend(_judge_fields(record, line))
    mismatched_seals: set[int] = set()  # lines of seal records over other bytes
    for check in ledger.seals:
        if seal_findings := _judge_seal_record(check):
            mismatched_seals.add(check.line)
            findings.extend(seal_findings)
    for attempt in attempts:
        findings.extend(_judge_attempt(attempt, policy or attempt_policy(attempt), lines))
    signature = _judge_signatures(
        ledger,
        trusted_keys or {},
        findings,
        required=require_signature or bool(trusted_keys),
        attempts=len(attempts),
        mismatched_seals=mismatched_seals,
    )
    return LedgerReport(
        path=str(ledger.path),
        findings=tuple(findings),
        attempts=len(attempts),
        records=len(ledger.records) + len(ledger.invalid_lines),
        bytes=ledger.bytes,
        algorithm=algorithm,
        digest=digest,
        signature=signature,
    )


def _judge_signatures(
    ledger: LedgerFile,
    trusted: Mapping[str, Ed25519PublicKey],
    findings: list[LedgerFinding],
    *,
    required: bool,
    attempts: int,
    mismatched_seals: set[int],
) -> SignatureVerdict:
    """Check every seal record's signature when ``required`` (findings appended);
    otherwise only say whether the file is signed.

    A signature covers bytes only through its seal record's prefix digest: a signed
    seal record that does not match the bytes before it (moved, copied, or with bytes
    changed before it; its line is in ``mismatched_seals``) is ``bad-signature``, and a
    file with no attempt is never ``signature-valid`` (nothing in it is signed)."""
    verdicts: list[SignatureVerdict] = []
    signed = False
    for check in ledger.seals:
        trust = judge_trust(
            check.record, trusted, required=required, covers=check.line not in mismatched_seals
        )
        signed = signed or trust.reason != "absent"
        if trust.code is None:
            continue
        attempt = check.record.get("attempt")
        number = attempt if _is_number(attempt) else None
        where = f"the seal record on line {check.line}"
        finding: LedgerFinding
        if trust.code == "bad-signature":
            message = (
                f"{where} is signed, but the bytes before it are not those it signed"
                if trust.reason == "other-bytes"
                else f"{where}: its signature does not verify"
            )
            finding = Finding("bad-signature", message, attempt=number, line=check.line)
        elif trust.code == "unknown-key":
            message = f"{where} is signed by a key that is not trusted"
            finding = Finding("unknown-key", message, attempt=number, line=check.line)
        else:
            message = f"{where} has no signature"
            finding = Finding("unsigned", message, attempt=number, line=check.line)
        verdicts.append(trust.code)
        findings.append(finding)
    if not required:
        return "not-checked" if signed else "unsigned"
    # Each seal record signs every byte before it: only lines after the last one (or
    # a file without one) are covered by no signature.
    last_line = max([line for line, _ in ledger.records] + list(ledger.invalid_lines), default=0)
    last_seal = ledger.seals[-1].line if ledger.seals else 0
    if not ledger.seals or last_line > last_seal:
        where = (
            "the file has no seal record"
            if not ledger.seals
            else f"lines {last_seal + 1}-{last_line} come after the last seal record"
        )
        verdicts.append("unsigned")
        findings.append(
            Finding(
                "unsigned",
                f"{where}: not covered by a signature",
                line=last_seal + 1 if ledger.seals else None,
            )
        )
    if not attempts and not verdicts:
        verdicts.append("unsigned")
        findings.append(Finding("unsigned", "the file holds no attempt: nothing in it is signed"))
    return verdicts[0] if verdicts else "signature-valid"


def _is_number(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _judge_seal(ledger: LedgerFile, findings: list[LedgerFinding]) -> tuple[str | None, str | None]:
    if not ledger.ends_with_newline:
        findings.append(Finding("torn-tail", "the last line is unterminated"))
    if not ledger.sidecars:
        findings.append(Finding("unsealed", "the file has no checksum sidecar"))
        return None, None
    chosen: tuple[str | None, str | None] = (None, None)
    for algorithm, sidecar in ledger.sidecars.items():
        actual = ledger.digests[algorithm]
        chosen = (algorithm, actual)
        if isinstance(sidecar, str):
            findings.append(Finding("sidecar-invalid", f"{algorithm} sidecar {sidecar}"))
            continue
        if sidecar.file_name not in {None, ledger.path.name}:
            findings.append(Finding("sidecar-invalid", f"the sidecar names {sidecar.file_name!r}"))
        if digests_equal(sidecar.digest, actual):
            continue
        if any(digests_equal(sidecar.digest, d) for d in ledger.seal_ends[algorithm]):
            findings.append(Finding("extended", "records were appended after the last seal"))
        else:
            findings.append(
                Finding("modified", "the file does not match its sidecar (changed after sealing)")
            )
    return chosen


def _judge_seal_record(check: SealCheck) -> list[LedgerFinding]:
    record = check.record
    attempt = record.get("attempt") if isinstance(record.get("attempt"), int) else None
    expected = record.get("prefixDigest")
    if (
        check.actual_digest is None
        or not isinstance(expected, str)
        or not digests_equal(expected, check.actual_digest)
        or record.get("prefixBytes") != check.actual_bytes
        or record.get("prefixRecords") != check.actual_records
    ):
        return [
            Finding(
                "seal-mismatch",
                f"the seal on line {check.line} does not match the bytes before it",
                attempt=attempt,
                line=check.line,
            )
        ]
    return []


_ED25519_BASE64: Final = re.compile(r"[A-Za-z0-9+/]{86}==")


def _is_signature_shape(value: object) -> bool:
    """An Ed25519 ``signature`` member as agc writes it: nothing else in it (base64 may
    look like a path: ``/home`` is four base64 characters)."""
    return (
        isinstance(value, Mapping)
        and set(value) == {"algorithm", "key_id", "value"}
        and value["algorithm"] == "ed25519"
        and isinstance(value["key_id"], str)
        and KEY_ID_PATTERN.fullmatch(value["key_id"]) is not None
        and isinstance(value["value"], str)
        and _ED25519_BASE64.fullmatch(value["value"]) is not None
    )


def _judge_fields(record: Mapping[str, Any], line: int) -> list[LedgerFinding]:
    if record.get("recordType") == RECORD_SEAL and _is_signature_shape(record.get("signature")):
        record = {key: value for key, value in record.items() if key != "signature"}
    findings: list[LedgerFinding] = []
    for key, _ in _walk(record):
        if key in FORBIDDEN_KEYS:
            findings.append(
                Finding("forbidden-field", f"line {line} holds the key {key!r}", line=line)
            )
    findings.extend(
        Finding("host-path", f"line {line}: {name} holds a host path", line=line)
        for name in host_path_fields(record, _NO_ROOT)
    )
    return findings


_NO_ROOT: Final = PathSanitizer([])
"""Knows no project root: any absolute path but a system executable is a host path."""


def _walk(value: object) -> Iterator[tuple[str, object]]:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            yield str(key), inner
            yield from _walk(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from _walk(inner)


def _judge_attempt(
    attempt: Attempt, policy: LedgerPolicy, lines: Mapping[int, int]
) -> list[LedgerFinding]:
    n = attempt.number
    findings: list[LedgerFinding] = []
    policy_hash = attempt.start.get("policySha256")
    if isinstance(policy_hash, str) and not policy.names_digest(policy_hash):
        findings.append(
            Finding(
                "policy-mismatch",
                f"attempt {n} was recorded with another policy; the recomputation may differ",
                "warning",
                attempt=n,
            )
        )
    seqs = [item.get("seq") for item in attempt.items]
    if seqs != list(range(1, len(seqs) + 1)):
        findings.append(
            Finding("seq-invalid", f"attempt {n}: item seq is not 1..{len(seqs)}", attempt=n)
        )
    if len(attempt.items) > MAX_ITEMS:
        findings.append(
            Finding("too-many-items", f"attempt {n} has {len(attempt.items)} items", attempt=n)
        )
    if attempt.end is None:
        findings.append(
            Finding(
                "turn-end-missing",
                f"attempt {n} has no turn_end (interrupted)",
                "warning",
                attempt=n,
            )
        )
    else:
        expected = derive_turn_end(attempt, policy)
        differing = [key for key in _DERIVED if attempt.end.get(key) != expected[key]]
        if differing:
            findings.append(
                Finding(
                    "turn-end-mismatch",
                    f"attempt {n}: turn_end {', '.join(differing)} differ(s) from the records",
                    attempt=n,
                    line=lines.get(id(attempt.end)),
                )
            )
    if attempt.seal is None:
        findings.append(
            Finding("attempt-unsealed", f"attempt {n} has no seal record", "warning", attempt=n)
        )
    return findings


def attempt_policy(attempt: Attempt) -> LedgerPolicy:
    """The preset an attempt was recorded with (by its ``policySha256``), else the
    default preset (a policy file must be given to recompute with it)."""
    return preset_for_digest(attempt.start.get("policySha256")) or default_policy()


# -- the public pair ----------------------------------------------------------------------


def check_turn_file(
    path: Path,
    *,
    policy: LedgerPolicy | None = None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
) -> LedgerReport:
    """Check a turn file: its seal, seal records, records and every ``turn_end``.

    ``policy`` recomputes ``turn_end``; by default each attempt's own preset (named by
    its ``policySha256``), else the default preset. ``trusted_keys`` (key id ->
    Ed25519 public key) or ``require_signature`` require every seal record to be
    signed by a trusted key (:func:`judge_turn_file`). Never raises on findings.

    Raises:
        StoreError: the file cannot be read.
    """
    return judge_turn_file(
        read_turn_file(path),
        policy,
        trusted_keys=trusted_keys,
        require_signature=require_signature,
    )


def verify_turn_file(
    path: Path,
    *,
    policy: LedgerPolicy | None = None,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
) -> LedgerReport:
    """Like :func:`check_turn_file`, but raise when the report has an error finding.

    Raises:
        VerificationError: not ok (``exc.report`` holds the report).
        StoreError: as :func:`check_turn_file`.
    """
    report = check_turn_file(
        path, policy=policy, trusted_keys=trusted_keys, require_signature=require_signature
    )
    if not report.ok:
        errors = [f.message for f in report.errors]
        raise VerificationError(f"turn file {path} failed: " + "; ".join(errors), report=report)
    return report


def show_turn_file(
    path: Path, *, attempt: int | None = None, policy: LedgerPolicy | None = None
) -> TurnSummary:
    """Summarize one attempt of a turn file (default: the last).

    Raises:
        LedgerInvalidError: no ``turn_start`` in the file, or no such attempt.
        StoreError: the file cannot be read.
    """
    ledger = read_turn_file(path)
    attempts, _ = split_attempts(record for _, record in ledger.records)
    if not attempts:
        raise LedgerInvalidError(f"{path} holds no turn_start record")
    index = len(attempts) if attempt is None else attempt
    if not 1 <= index <= len(attempts):
        raise LedgerInvalidError(
            f"{path} has {len(attempts)} attempt(s); there is no attempt {index}",
            hint=f"Give --attempt between 1 and {len(attempts)}.",
        )
    chosen = attempts[index - 1]
    return summarize_attempt(chosen, len(attempts), policy or attempt_policy(chosen))
