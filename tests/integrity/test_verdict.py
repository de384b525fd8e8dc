"""Verdicts a person reads: one table maps every finding code to a word and a category,
a run's verdict is its most severe error finding, and every renderer (agc-verify text,
the HTML page, the CSV, the JSON) shows the same word in the same category's colour."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agc._core.report import Finding
from agc._core.store import ARTIFACT_KINDS
from agc.cli.verify_text import SGR, format_report, format_store
from agc.integrity import (
    ArtifactReport,
    RunFindingCode,
    RunReport,
    StoreFindingCode,
    StoreReport,
    Verdict,
    audit_csv,
    audit_html,
    count_verdicts,
    finding_text,
    verdict_of,
)
from agc.integrity._audit import CSV_COLUMNS, Audit, AuditRun
from agc.integrity._verdict import CATEGORIES, VERDICTS

REACHES_INSIDE = {
    "agc.integrity._audit": "builds an Audit from hand-made run reports; the CSV column list",
    "agc.integrity._judge": "the close-run-id thresholds, to compare with difflib",
    "agc.integrity._verdict": "the verdict and category tables, whole",
    "agc.integrity._run_reader": "the close-run-id search on its own, over swapped stored ids",
}

NOW = 1_764_460_800_000
RUN_CODES = sorted(get_args(RunFindingCode))
STORE_CODES = sorted(get_args(StoreFindingCode))

# What the categories mean, written out independently of the table: tampering and
# destruction are red, a missing signature or a run that is not there orange, a crash
# yellow.
SPECIFIED = {
    "modified": "tampered",
    "extended": "tampered",
    "truncated": "tampered",
    "replaced": "tampered",
    "deleted": "tampered",
    "bad-signature": "tampered",
    "manifest-replaced": "tampered",
    "chain-broken": "tampered",
    "unsigned": "unverified",
    "unknown-key": "unverified",
    "run-missing": "unverified",
    "retention-short": "unverified",
    "unsealed": "unfinished",
    "torn-tail": "unfinished",
    "recovered": "unfinished",
    "empty": "unfinished",
}


@dataclass(frozen=True)
class _Located(Finding[Any]):
    """A finding that names a range of lines (``lines``: 1-based first and last)."""

    lines: tuple[int, int] | None = None


def _run(*findings: Finding[Any], run_id: str = "r1") -> RunReport:
    artifacts = tuple(
        ArtifactReport(
            kind,
            f"/store/{kind}/{run_id}.jsonl",
            tuple(f for f in findings if f.artifact == kind),
            "blake3",
            "0" * 64,
            10,
            1,
        )
        for kind in ARTIFACT_KINDS
    )
    return RunReport(
        run_id=run_id, store="/store", findings=findings, artifacts=artifacts, manifest=True
    )


def _audit(*runs: RunReport, findings: tuple[Finding[Any], ...] = ()) -> Audit:
    return Audit(
        store="/store",
        scope="all",
        complete=all(r.complete for r in runs) and not findings,
        head=None,
        head_position=0,
        expected_head=None,
        findings=findings,
        runs=tuple(AuditRun(r, ()) for r in runs),
        generated_ms=NOW,
    )


def _csv_rows(audit: Audit) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(audit_csv(audit))))


# -- the table ---------------------------------------------------------------------------


@pytest.mark.parametrize("code", sorted(set(RUN_CODES) | set(STORE_CODES)))
def test_every_code_the_integrity_package_can_emit_has_a_verdict(code: str) -> None:
    """A new finding code added to a report's code ``Literal`` fails here until the
    table says how it reads (never an unrendered code)."""
    assert code in VERDICTS
    assert VERDICTS[code] in CATEGORIES
    assert VERDICTS[code] != "ok", "a finding is never the colour of a complete run"


@pytest.mark.parametrize(("code", "category"), sorted(SPECIFIED.items()))
def test_each_code_reads_as_its_own_word_in_its_category(code: str, category: str) -> None:
    verdict = verdict_of([Finding(code, "something is wrong")])
    assert verdict == Verdict(code, category)  # type: ignore[arg-type]
    assert not verdict.ok


def test_a_run_without_an_error_is_complete_whatever_its_warnings() -> None:
    warnings = [
        Finding("recovered", "sealed by agc recover", "warning"),
        Finding("signature-not-verified", "no trusted key", "warning"),
    ]
    assert verdict_of(warnings) == Verdict("complete", "ok")
    assert verdict_of([]).ok


@pytest.mark.parametrize(
    ("codes", "word"),
    [
        (["unsigned", "modified"], "modified"),  # tampered before unverified
        (["unsealed", "unsigned"], "unsigned"),  # unverified before unfinished
        (["torn-tail", "unsealed"], "unsealed"),  # within a category: the table's order
        (["truncated", "deleted", "extended"], "deleted"),
        (["modified", "a-code-no-table-knows"], "a-code-no-table-knows"),  # never understated
    ],
)
def test_a_run_with_several_findings_reads_as_the_most_severe(codes: list[str], word: str) -> None:
    findings = [Finding(code, "x") for code in codes]
    assert verdict_of(findings).word == word
    assert verdict_of(reversed(findings)).word == word


@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(VERDICTS)), st.sampled_from(["error", "warning"])),
        max_size=8,
    ),
    st.randoms(use_true_random=False),
)
def test_the_verdict_is_an_error_code_of_the_run_whatever_the_order(
    findings: list[tuple[str, str]], random: Any
) -> None:
    built = [Finding(code, "x", severity) for code, severity in findings]  # type: ignore[arg-type]
    verdict = verdict_of(built)
    shuffled = list(built)
    random.shuffle(shuffled)
    assert verdict_of(shuffled) == verdict
    errors = [f.code for f in built if f.severity == "error"]
    assert verdict.ok is (not errors)
    if errors:
        assert verdict.word in errors
        order = list(CATEGORIES)
        assert all(order.index(verdict.category) <= order.index(VERDICTS[code]) for code in errors)


def test_verdicts_are_counted_most_severe_first_complete_last() -> None:
    verdicts = [
        Verdict("complete", "ok"),
        Verdict("unsigned", "unverified"),
        Verdict("modified", "tampered"),
        Verdict("unsigned", "unverified"),
        Verdict("unsealed", "unfinished"),
    ]
    counts = count_verdicts(verdicts)
    assert [(v.word, n) for v, n in counts.items()] == [
        ("modified", 1),
        ("unsigned", 2),
        ("unsealed", 1),
        ("complete", 1),
    ]


def test_a_located_finding_names_its_lines() -> None:
    located = _Located("modified", "transcript checksum mismatch", lines=(2001, 3000))
    assert finding_text(located) == "modified: transcript checksum mismatch (lines 2001-3000)"
    assert finding_text(_Located("modified", "m", lines=(7, 7))) == "modified: m (line 7)"
    assert finding_text(Finding("modified", "m")) == "modified: m"
    assert finding_text(located, code=False) == "transcript checksum mismatch (lines 2001-3000)"


# -- every renderer uses the table -------------------------------------------------------


@pytest.mark.parametrize("code", RUN_CODES)
def test_every_run_code_reads_the_same_in_text_html_csv_and_json(code: str) -> None:
    category = VERDICTS[code]
    report = _run(Finding(code, f"the {code} message", artifact="transcript"))
    # text: the FAIL line names the code and is in the category's colour, as the verdict
    lines = format_report(report, color=True)
    assert f"{SGR[category]}FAIL\x1b[0m transcript   {code}: the {code} message" in lines
    assert lines[-1].startswith(f"run r1: {SGR[category]}{code}\x1b[0m ({category}; ")
    plain = format_report(report)
    assert plain[-1] == f"run r1: {code} ({category}; 1 finding(s))"
    assert "\x1b[" not in "".join(plain)
    # --all lines
    store = StoreReport(store="/store", runs=(report,), findings=(), head=None, head_position=0)
    assert format_store(store)[0] == f"FAIL r1  {code}  unsigned  {code}: the {code} message"
    summary = f"store /store: INCOMPLETE; 0/1 runs complete, 1 {code};"
    assert format_store(store)[-1].startswith(summary)
    # HTML: the badge and the row say the word in the category's colour
    page = audit_html(_audit(report))
    assert f'<span class="badge {category}">{code}</span>' in page
    assert f'data-verdict-word="{code}" data-verdict-category="{category}"' in page
    assert f'<li class="error {category}" data-code="{code}">' in page
    # CSV and JSON
    (row,) = _csv_rows(_audit(report))
    assert (row["verdict"], row["verdict_word"], row["verdict_category"]) == (
        "incomplete",
        code,
        category,
    )
    data = report.to_dict()
    assert (data["complete"], data["verdict_word"], data["verdict_category"]) == (
        False,
        code,
        category,
    )


@pytest.mark.parametrize("code", STORE_CODES)
def test_every_store_code_is_named_and_coloured(code: str) -> None:
    category = VERDICTS[code]
    finding: Finding[Any] = Finding(code, f"the {code} message", artifact="store")
    store = StoreReport(
        store="/store", runs=(_run(run_id="ok"),), findings=(finding,), head=None, head_position=0
    )
    lines = format_store(store, color=True)
    assert f"{SGR[category]}FAIL\x1b[0m store  {code}: the {code} message" in lines
    assert f"{SGR[category]}INCOMPLETE\x1b[0m" in lines[-1]
    page = audit_html(_audit(_run(run_id="ok"), findings=(finding,)))
    assert f'<li class="error {category}" data-code="{code}">' in page


def test_unsigned_is_not_the_red_of_modified() -> None:
    """With a trusted key, an intact unsigned run is orange, a modified one red: the
    badge, the row, the text colour and the CSV differ."""
    unsigned = _run(Finding("unsigned", "run manifest is not signed", artifact="manifest"))
    modified = _run(
        Finding("modified", "transcript checksum mismatch", artifact="transcript"), run_id="r2"
    )
    page = audit_html(_audit(modified, unsigned))
    assert '<span class="badge unverified">unsigned</span>' in page
    assert '<span class="badge tampered">modified</span>' in page
    assert SGR["unverified"] != SGR["tampered"]
    assert format_report(unsigned, color=True)[0].startswith(f"{SGR['unverified']}FAIL")
    assert format_report(modified, color=True)[0].startswith(f"{SGR['tampered']}FAIL")
    rows = {r["run_id"]: r["verdict_category"] for r in _csv_rows(_audit(modified, unsigned))}
    assert rows == {"r1": "unverified", "r2": "tampered"}


def test_a_located_finding_shows_its_lines_in_every_format() -> None:
    located = _Located(
        "modified", "transcript checksum mismatch", artifact="transcript", lines=(2001, 3000)
    )
    report = _run(located)
    assert "FAIL transcript   modified: transcript checksum mismatch (lines 2001-3000)" in (
        format_report(report)
    )
    store = StoreReport(store="/store", runs=(report,), findings=(), head=None, head_position=0)
    assert format_store(store)[0].endswith("(lines 2001-3000)")
    assert "transcript checksum mismatch (lines 2001-3000)</li>" in audit_html(_audit(report))
    (row,) = _csv_rows(_audit(report))
    assert row["findings"] == "transcript checksum mismatch (lines 2001-3000)"


def test_the_csv_keeps_its_columns_and_adds_new_ones_after_the_verdict() -> None:
    assert CSV_COLUMNS[:2] == ("run_id", "verdict")
    at = CSV_COLUMNS.index("verdict_word")
    assert CSV_COLUMNS[at - 1 : at + 3] == (
        "chain_head",
        "verdict_word",
        "verdict_category",
        "client",
    )
    assert CSV_COLUMNS[-2:] == ("expected_digest", "observed_digest")


# -- did you mean: the same suggestion as difflib, at a bounded cost ------------------

_ID_CHARS = "abcdef0123456789-"


def _suggest(monkeypatch: pytest.MonkeyPatch, store: Path, asked: str, stored: set[str]) -> Any:
    from agc._core.folderstore import FolderStore  # noqa: PLC0415 - local to these tests
    from agc.integrity import _run_reader  # noqa: PLC0415 - same

    monkeypatch.setattr(_run_reader, "stored_run_ids", lambda store, **_: set(stored))
    return _run_reader._close_run_id(FolderStore(store), asked)


@given(
    asked=st.text(_ID_CHARS, min_size=1, max_size=24),
    stored=st.sets(st.text(_ID_CHARS, min_size=1, max_size=24), max_size=40),
)
def test_property_the_suggestion_is_difflibs_closest_match(asked: str, stored: set[str]) -> None:
    import difflib  # noqa: PLC0415 - the reference

    from agc.integrity._judge import CLOSE_ID_RATIO  # noqa: PLC0415 - same

    expected = difflib.get_close_matches(asked, sorted(stored), n=1, cutoff=CLOSE_ID_RATIO)
    with pytest.MonkeyPatch.context() as patch:
        found = _suggest(patch, Path("store"), asked, stored)
    assert found == (expected[0] if expected else None)


def test_a_typo_among_10000_long_alike_ids_is_found_with_a_bounded_number_of_full_comparisons(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import difflib  # noqa: PLC0415 - counted
    import random  # noqa: PLC0415 - a fixed store

    from agc.integrity._judge import CLOSE_ID_COMPARISONS  # noqa: PLC0415 - same

    rng = random.Random(7)
    stored = {"run-" + "".join(rng.choice("ab") for _ in range(120)) for _ in range(10_000)}
    meant = sorted(stored)[1234]
    asked = meant[:60] + ("a" if meant[60] == "b" else "b") + meant[61:]
    calls = 0
    ratio = difflib.SequenceMatcher.ratio

    def counted(self: difflib.SequenceMatcher[str]) -> float:
        nonlocal calls
        calls += 1
        assert calls <= CLOSE_ID_COMPARISONS, "compared in full more often than the bound"
        return ratio(self)

    monkeypatch.setattr(difflib.SequenceMatcher, "ratio", counted)
    assert _suggest(monkeypatch, tmp_path, asked, stored) == meant


def test_a_fail_line_leads_with_its_errors_and_says_its_warnings_after() -> None:
    warning = Finding("recovered", "sealed by agc recover", "warning", artifact="transcript")
    error = Finding("modified", "transcript checksum mismatch", artifact="transcript")
    for findings in ((warning, error), (error, warning)):
        (line,) = [x for x in format_report(_run(*findings)) if x.startswith("FAIL")]
        assert line == (
            "FAIL transcript   modified: transcript checksum mismatch; "
            "warning: sealed by agc recover"
        )
