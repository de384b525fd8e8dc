"""The audit report's renderers: self-contained HTML (nothing loaded, store content
escaped, failing runs first) and CSV (RFC 4180, no formula injection)."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from agc._core import store as store_rules
from agc._core.memstore import MemoryStore
from agc._core.storage import BucketLock
from agc.integrity import (
    _writer,
    audit_csv,
    audit_html,
    build_audit,
    check_run,
    generate_keypair,
    load_signing_key,
    load_trusted_keys,
    open_run,
)
from agc.integrity._audit import CSV_COLUMNS, _cell
from tests.conftest import fixed_clock, steady_checkpoint_timer, write_run
from tests.integrity.evidence_helpers import transcript_path

REACHES_INSIDE = {
    "agc.integrity._audit": "the CSV column list and the cell quoting rule, on single cells",
    "agc.integrity._writer": "swaps the writer's run-id rule to write runs it would refuse",
}

NOW = 1_764_460_800_000


def _store_with_a_tampered_run(store: Path) -> None:
    for offset, run_id in enumerate(("alpha", "beta", "gamma")):
        write_run(store, run_id, clock=fixed_clock(NOW + offset * 60_000))
    path = transcript_path(store, "beta")
    path.write_bytes(path.read_bytes().replace(b"hi", b"HI"))


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def _elements(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = _Elements()
    parser.feed(page)
    return parser.tags


def test_failing_runs_come_first_everywhere(store: Path) -> None:
    _store_with_a_tampered_run(store)
    audit = build_audit(store, generated_ms=NOW)
    assert [r.report.run_id for r in audit.runs] == ["beta", "alpha", "gamma"]
    assert not audit.complete
    page = audit_html(audit)
    rows = [a["data-run"] for t, a in _elements(page) if t == "tr" and "data-run" in a]
    assert rows == ["beta", "alpha", "gamma"]
    sections = [a["data-run"] for t, a in _elements(page) if t == "section" and "data-run" in a]
    assert sections == ["beta", "alpha", "gamma"]
    rows_csv = list(csv.reader(io.StringIO(audit_csv(audit))))
    assert rows_csv[0] == list(CSV_COLUMNS)
    assert [row[0] for row in rows_csv[1:]] == ["beta", "alpha", "gamma"]
    assert rows_csv[1][1] == "incomplete"
    assert rows_csv[1][CSV_COLUMNS.index("finding_codes")] == "modified"


def test_the_page_has_the_store_head_findings_signatures_and_a_timeline(store: Path) -> None:
    _store_with_a_tampered_run(store)
    audit = build_audit(store, generated_ms=NOW)
    page = audit_html(audit)
    assert str(store) in page
    assert audit.head is not None
    assert audit.head in page
    assert 'data-code="modified"' in page
    assert "unsigned" in page
    events = [(a["data-run"], a["data-event"]) for t, a in _elements(page) if "data-event" in a]
    assert ("alpha", "first-record") in events
    assert {("alpha", "sealed"), ("beta", "sealed"), ("gamma", "sealed")} <= set(events)
    times = re.findall(
        r'<li class="[a-z]+" data-run="[^"]+" data-event="[^"]+"><time '
        r'datetime="([^"]+)"',
        page,
    )
    assert times == sorted(times)


def test_the_page_loads_nothing(store: Path) -> None:
    _store_with_a_tampered_run(store)
    page = audit_html(build_audit(store, generated_ms=NOW))
    assert "default-src 'none'" in page
    tags = {tag for tag, _ in _elements(page)}
    assert not tags & {"script", "link", "img", "iframe", "object", "embed", "svg"}
    assert not re.search(r"https?://|url\(|@import|src=", page)


@pytest.mark.parametrize(
    "name", ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "a&b"]
)
def test_store_content_is_escaped(tmp_path: Path, name: str) -> None:
    store = tmp_path / name.replace("/", "_")
    write_run(store, "r1")
    page = audit_html(build_audit(store, generated_ms=NOW))
    tags = {tag for tag, _ in _elements(page)}
    assert "script" not in tags
    assert "img" not in tags
    assert name not in page


@pytest.mark.parametrize("text", ["=HYPERLINK(1)", "+1", "@SUM(A1)", "-2", "\t=1", "\r=1"])
def test_csv_cells_never_start_a_formula(text: str) -> None:
    assert _cell(text) == "'" + text
    assert _cell("a=1") == "a=1"


def test_a_dash_run_id_is_not_a_formula_in_the_csv(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run ids may not begin with '-' any more, but stores made before the rule exist."""
    monkeypatch.setattr(_writer, "validate_new_run_id", store_rules.validate_run_id)
    write_run(store, "-2.3")
    rows = list(csv.reader(io.StringIO(audit_csv(build_audit(store, generated_ms=NOW)))))
    assert rows[1][0] == "'-2.3"
    for row in rows[1:]:
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row)


def test_an_empty_store_is_never_complete(store: Path) -> None:
    audit = build_audit(store, generated_ms=NOW)
    assert not audit.complete
    assert "no run to verify" in audit_html(audit)


def test_named_runs_only(store: Path) -> None:
    _store_with_a_tampered_run(store)
    audit = build_audit(store, ["gamma", "alpha"], generated_ms=NOW)
    assert audit.complete
    assert audit.scope == "runs"
    assert [r.report.run_id for r in audit.runs] == ["alpha", "gamma"]
    assert audit.head is not None  # the chain head is shown for named runs too


def test_with_a_trusted_key_intact_unsigned_runs_are_orange_and_a_modified_one_red(
    tmp_path: Path, store: Path
) -> None:
    """The page and the CSV tell an unsigned run (nothing changed, no signature) from a
    modified one: another word and another colour, where both once read INCOMPLETE."""
    private, public, _ = generate_keypair(tmp_path / "keys")
    key = load_signing_key(private)
    for offset, run_id in enumerate(("signed-ok", "signed-modified")):
        with _writer.open_run(
            run_id, store=store, clock=fixed_clock(NOW + offset * 60_000), signing_key=key
        ) as run:
            run.transcript.write({"role": "user", "content": "hi"})
    for run_id in ("old-1", "old-2"):
        write_run(store, run_id, clock=fixed_clock(NOW + 600_000))
    path = transcript_path(store, "signed-modified")
    path.write_bytes(path.read_bytes().replace(b"hi", b"HI"))
    audit = build_audit(store, trusted_keys=load_trusted_keys([public]), generated_ms=NOW)
    page = audit_html(audit)
    rows = {
        a["data-run"]: (a["data-verdict-word"], a["data-verdict-category"], a["class"])
        for t, a in _elements(page)
        if t == "tr" and "data-run" in a
    }
    assert rows == {
        "old-1": ("unsigned", "unverified", "run fail unverified"),
        "old-2": ("unsigned", "unverified", "run fail unverified"),
        "signed-modified": ("modified", "tampered", "run fail tampered"),
        "signed-ok": ("complete", "ok", "run ok"),
    }
    counts = [
        (a["data-verdict-word"], a["data-count"])
        for t, a in _elements(page)
        if t == "span" and "data-count" in a
    ]
    assert counts == [("modified", "1"), ("unsigned", "2"), ("complete", "1")]
    sheet = {
        row["run_id"]: (row["verdict"], row["verdict_word"], row["verdict_category"])
        for row in csv.DictReader(io.StringIO(audit_csv(audit)))
    }
    assert sheet["old-1"] == ("incomplete", "unsigned", "unverified")
    assert sheet["signed-modified"] == ("incomplete", "modified", "tampered")
    assert sheet["signed-ok"] == ("complete", "complete", "ok")


_SESSION_FACTS = {
    "client": "codex",
    "session_id": "019c8a4d",
    "model": "gpt-5",
    "project": "sha256:0123456789abcdef",
    "first_agent_ts": "2026-02-23T11:41:04.709Z",
    "last_agent_ts": "2026-02-23T12:00:00+01:00",
    "tool_calls": 23,
    "tool_failures": 2,
}


def _captured(store: Path, run_id: str = "codex-019c8a4d") -> None:
    with (
        steady_checkpoint_timer(),
        open_run(run_id, store=store, clock=fixed_clock(), attributes=_SESSION_FACTS) as run,
    ):
        run.transcript.write({"role": "user", "content": "hi"})
        run.tool_events.write({"event": "call", "tool": "shell"})


def test_each_run_says_what_it_was_and_when_the_agent_worked(store: Path) -> None:
    _captured(store)
    write_run(store, "plain")
    audit = build_audit(store, generated_ms=0)
    about = {run.report.run_id: dict(run.about) for run in audit.runs}
    assert about == {"codex-019c8a4d": _SESSION_FACTS, "plain": {}}
    agent = [(e.event, e.at_ms) for e in audit.timeline if e.event.startswith("agent-")]
    assert sorted(agent) == sorted([("agent-first", 1771846864709), ("agent-last", 1771844400000)])
    page = audit_html(audit)
    for key, value in _SESSION_FACTS.items():
        assert f'data-about="{key}"><code>{value}</code>' in page
    assert "codex, gpt-5, 23 tool calls (2 failed)" in page
    rows = {r["run_id"]: r for r in csv.DictReader(io.StringIO(audit_csv(audit)))}
    assert {k: rows["codex-019c8a4d"][k] for k in _SESSION_FACTS} == {
        k: str(v) for k, v in _SESSION_FACTS.items()
    }
    assert rows["plain"]["client"] == ""


def test_a_failed_artifact_shows_the_digest_sealed_and_the_digest_found(store: Path) -> None:
    _store_with_a_tampered_run(store)
    audit = build_audit(store, generated_ms=0)
    failing = audit.runs[0].report
    (modified,) = [f for f in failing.findings if f.code == "modified"]
    assert modified.expected is not None
    assert modified.actual is not None
    sealed, found = modified.expected["digest"], modified.actual["digest"]
    assert sealed != found
    page = audit_html(audit)
    assert f'expected <code class="digest" data-expected>{sealed}</code>' in page
    assert f'observed <code class="digest" data-observed>{found}</code>' in page
    row = next(csv.DictReader(io.StringIO(audit_csv(audit))))
    assert (row["expected_digest"], row["observed_digest"]) == (sealed, found)


def test_the_report_reads_a_store_through_its_interface(store: Path) -> None:
    # an object store (here the in-memory one): verdicts, facts and first records alike
    _captured(store)
    bucket = MemoryStore(prefix="team/evidence", lock=BucketLock(enabled=True))
    for path in sorted(store.rglob("*")):
        relative = path.relative_to(store).as_posix()
        if path.is_file() and relative.startswith(
            ("audit/transcripts/", "audit/tool-events/", "audit/manifests/")
        ):
            bucket.put_new(relative, path.read_bytes())
    on_folder = build_audit(store, ["codex-019c8a4d"], generated_ms=0)
    in_bucket = build_audit(bucket, ["codex-019c8a4d"], generated_ms=0)
    assert in_bucket.store == bucket.url
    assert [dict(r.about) for r in in_bucket.runs] == [_SESSION_FACTS]
    # the verdict is the object store's own check (the chain was not copied: unchained)
    assert [r.report.findings for r in in_bucket.runs] == [
        check_run("codex-019c8a4d", bucket).findings
    ]
    assert in_bucket.timeline == on_folder.timeline
