"""Tests for agc._core.report: one Finding shape, one Report base, every report kind on it."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st

import agc
from agc._core.report import SCHEMA_VERSION, SEVERITIES, Finding, JsonItems, Report, listed
from agc.errors import ReportInvalidError
from agc.exitcodes import ExitCode
from agc.integrity import ArtifactReport, RunReport, StoreReport
from agc.ledger import LedgerReport
from agc.resume import HistoryReport

ToyCode = Literal["all-bad", "just-saying"]


@dataclasses.dataclass(frozen=True)
class ToyReport(Report[ToyCode]):
    CODES = frozenset({"all-bad", "just-saying"})

    name: str
    findings: tuple[Finding[ToyCode], ...]

    @property
    def fine(self) -> bool:
        return not self.errors

    def _members(self) -> dict[str, Any]:
        return {"name": self.name, "fine": self.fine}


@pytest.mark.parametrize("code", ["", "Modified", "torn_tail", "-x", "x-", "a--b", "a b", 7])
def test_a_code_that_is_not_kebab_case_is_refused(code: Any) -> None:
    with pytest.raises(ReportInvalidError, match="kebab-case") as caught:
        Finding(code, "message")
    assert caught.value.exit_code == ExitCode.INTERNAL
    assert caught.value.code == "report-invalid"


def test_an_unknown_severity_is_refused() -> None:
    with pytest.raises(ReportInvalidError, match="severity 'fatal'"):
        Finding("all-bad", "message", "fatal")  # type: ignore[arg-type]


def test_optional_fields_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        Finding("all-bad", "message", "error", "transcript")  # type: ignore[call-arg]


def test_to_dict_keeps_the_order_asked_and_copies_mappings() -> None:
    expected = {"digest": "ab", "bytes": 3}
    finding = Finding("all-bad", "m", artifact="transcript", expected=expected)
    data = finding.to_dict(("severity", "code", "expected", "actual"))
    assert list(data) == ["severity", "code", "expected", "actual"]
    assert data == {"severity": "error", "code": "all-bad", "expected": expected, "actual": None}
    assert type(data["expected"]) is dict
    assert data["expected"] is not expected
    assert list(finding.to_dict())[:3] == ["code", "message", "severity"]


def test_report_verdict_schema_version_and_unknown_codes() -> None:
    warning = Finding[ToyCode]("just-saying", "fyi", "warning")
    error = Finding[ToyCode]("all-bad", "broken")
    assert ToyReport("a", (warning,)).fine
    report = ToyReport("b", (warning, error))
    assert not report.fine
    assert report.errors == (error,)
    assert report.warnings == (warning,)
    assert report.codes() == {"just-saying", "all-bad"}
    assert report.to_dict() == {"schema_version": SCHEMA_VERSION, "name": "b", "fine": False}
    assert next(iter(report.to_dict())) == "schema_version"
    with pytest.raises(ReportInvalidError, match="does not know the finding code"):
        ToyReport("c", (Finding("other-code", "?"),))  # type: ignore[arg-type]


def test_a_report_is_frozen() -> None:
    report = ToyReport("a", ())
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.name = "b"  # type: ignore[misc]


def _run(findings: tuple[Finding[Any], ...]) -> RunReport:
    return RunReport(run_id="r1", store="/s", findings=findings, artifacts=(), manifest=True)


def _artifact(findings: tuple[Finding[Any], ...]) -> ArtifactReport:
    return ArtifactReport(
        kind="transcript",
        path="/s/r1.jsonl",
        findings=findings,
        algorithm=None,
        digest=None,
        bytes=None,
        records=None,
    )


def _store(findings: tuple[Finding[Any], ...]) -> StoreReport:
    return StoreReport(store="/s", runs=(), findings=findings, head=None, head_position=0)


def _history(findings: tuple[Finding[Any], ...]) -> HistoryReport:
    return HistoryReport("openai-chat", 0, 0, 0, findings=findings)


def _ledger(findings: tuple[Finding[Any], ...]) -> LedgerReport:
    return LedgerReport(
        path="t.jsonl",
        findings=findings,
        attempts=1,
        records=1,
        bytes=1,
        algorithm=None,
        digest=None,
    )


# Every report kind, its one verdict property, and how it is built from findings.
KINDS: list[tuple[type[Report[Any]], str, Callable[[tuple[Finding[Any], ...]], Report[Any]]]] = [
    (RunReport, "complete", _run),
    (ArtifactReport, "ok", _artifact),
    (StoreReport, "complete", _store),
    (HistoryReport, "valid", _history),
    (LedgerReport, "ok", _ledger),
]


@pytest.mark.parametrize(("kind", "verdict", "build"), KINDS, ids=[k[0].__name__ for k in KINDS])
@given(data=st.data())
def test_every_verdict_is_computed_from_the_findings(
    kind: type[Report[Any]],
    verdict: str,
    build: Callable[[tuple[Finding[Any], ...]], Report[Any]],
    data: st.DataObject,
) -> None:
    finding = st.builds(
        Finding,
        st.sampled_from(sorted(kind.CODES)),
        st.text(max_size=20),
        st.sampled_from(SEVERITIES),
    )
    findings = tuple(data.draw(st.lists(finding, max_size=6)))
    report = build(findings)
    has_error = any(f.severity == "error" for f in findings)
    assert getattr(report, verdict) is not has_error
    # A verdict is never a stored field that could contradict the findings.
    assert verdict not in {f.name for f in dataclasses.fields(kind)}
    if isinstance(report, RunReport):
        assert report.missing == tuple(f.message for f in findings if f.severity == "error")
    if kind is not ArtifactReport:
        data_out = report.to_dict()
        assert data_out["schema_version"] == SCHEMA_VERSION
        assert data_out[verdict] is not has_error


def test_a_run_report_refuses_artifact_findings_it_does_not_hold() -> None:
    stray = Finding("modified", "transcript checksum mismatch", artifact="transcript")
    with pytest.raises(ReportInvalidError, match="missing from the run's findings"):
        RunReport(
            run_id="r1", store="/s", findings=(), artifacts=(_artifact((stray,)),), manifest=True
        )


def test_schema_version_is_written_in_one_place() -> None:
    """No ``"schema_version": <number>`` literal in the package: every --json output takes
    the one constant."""
    package = Path(str(agc.__file__)).parent
    offenders = [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), start=1)
        if re.search(r"""["']schema_version["']\s*:\s*\d""", line)
    ]
    assert offenders == []


def test_to_streamed_leaves_long_lists_lazy_and_to_dict_lists_them() -> None:
    findings: tuple[Finding[Any], ...] = tuple(
        Finding("duplicate-call-id", f"f{n}", message_index=n, record=n, call_id=f"c{n}")
        for n in range(3)
    )
    report = HistoryReport("codex-rollout", 3, 3, 3, findings=findings)
    streamed = report.to_streamed()
    assert isinstance(streamed["findings"], JsonItems)
    assert streamed["findings"].escapes is None  # a tuple: not known, looked for when written
    assert list(streamed["findings"]) == report.to_dict()["findings"]
    assert listed(streamed) == report.to_dict()
    assert [entry["line"] for entry in report.to_dict()["findings"]] == [1, 2, 3]
    assert listed({"a": {"b": JsonItems([1, 2], str)}, "c": [JsonItems([], str)]})["a"] == {
        "b": ["1", "2"]
    }
    assert not JsonItems((), str)
    assert JsonItems([1], str)
