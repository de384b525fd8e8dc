"""An auditor's report of a store: one self-contained HTML page, or CSV for spreadsheets.

:func:`build_audit` gathers the verdicts (``check_store`` for the whole store, or
``check_run`` for named runs) and a timeline from the run manifests; :func:`audit_html`
and :func:`audit_csv` are pure renderers of that :class:`Audit`.

The HTML page loads nothing: no script, no font, no image, no link to a CDN. Its
Content-Security-Policy (``default-src 'none'``) makes any such load fail in the
browser, and everything taken from the store (run ids, findings, paths) is escaped.
Failing runs come first. In the CSV, a cell that a spreadsheet would run as a formula
(leading ``=``, ``+``, ``-``, ``@``, tab or CR, as OWASP's "CSV Injection" advises) is
prefixed with ``'``.
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, cast

from agc._core.storage import Store
from agc._core.store import StoreArg, StoreLayout, artifact_path, manifest_path, open_store
from agc._core.words import counted
from agc.errors import AgcError
from agc.integrity._chain import read_head
from agc.integrity._chain_objects import read_remote_head
from agc.integrity._manifest import MAX_MANIFEST_BYTES, RunManifest
from agc.integrity._store_verify import check_store
from agc.integrity._verdict import (
    CATEGORIES,
    Verdict,
    category_of,
    count_verdicts,
    finding_text,
    most_severe,
    verdict_of,
)
from agc.integrity._verify import Finding, RunReport, check_run

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

__all__ = ["Audit", "AuditRun", "TimelineEvent", "audit_csv", "audit_html", "build_audit"]

_FIRST_LINE_LIMIT: Final = 1 << 20
_LAST_MS: Final = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


@dataclass(frozen=True)
class TimelineEvent:
    """Something that happened to a run: ``first-record``, ``sealed``, ``recovered``,
    ``reopened``; ``at_ms`` is Unix time in ms."""

    at_ms: int
    run_id: str
    event: str
    detail: str = ""


@dataclass(frozen=True)
class AuditRun:
    """One run in the report: its verdict, when it was written, and what it was.

    Attributes:
        report: the run's verdict.
        events: its timeline: when it was written, sealed, recovered, and, for a
            captured client session, when the agent worked.
        about: the facts its manifest's ``attributes`` give (a captured session: client,
            session id, model, project, the agent's first and last timestamps, tool
            calls and failures; see ``docs/format.md``), in the manifest's order;
            empty when it gives none.
    """

    report: RunReport
    events: tuple[TimelineEvent, ...]
    about: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Audit:
    """What the report shows.

    Attributes:
        store: the store folder.
        scope: ``"all"`` (the whole store and its chain) or ``"runs"`` (named runs).
        complete: every run complete and, for ``all``, no store-level error.
        head, head_position: the chain head (``None`` for an empty chain).
        expected_head: the head pinned with ``--expect-head``, if any.
        findings: store-level findings (``all`` only).
        runs: failing runs first, each group by run id.
        generated_ms: when the report was made (Unix ms).
        generator: the program and version named in the page ("agc 0.1.0").
    """

    store: str
    scope: str
    complete: bool
    head: str | None
    head_position: int
    expected_head: str | None
    findings: tuple[Finding[Any], ...]
    runs: tuple[AuditRun, ...]
    generated_ms: int
    generator: str = "agc"

    @property
    def failing(self) -> int:
        return sum(not run.report.complete for run in self.runs)

    @property
    def timeline(self) -> list[TimelineEvent]:
        events = [event for run in self.runs for event in run.events]
        return sorted(events, key=lambda e: (e.at_ms, e.run_id, e.event))


def build_audit(
    store: StoreArg | Store = None,
    run_ids: Sequence[str] | None = None,
    *,
    trusted_keys: Mapping[str, Ed25519PublicKey] | None = None,
    require_signature: bool = False,
    allow_unsigned: bool = False,
    allow_recovered: bool = False,
    expect_head: str | None = None,
    generated_ms: int,
    generator: str = "agc",
) -> Audit:
    """Check the store (``run_ids`` ``None``) or the named runs and gather a timeline.

    ``store`` is a folder or an ``s3://bucket/prefix`` URL: the verdicts are the
    store's own checks, and the manifests and first records are read through the store.

    Raises:
        RunIdInvalidError, StoreError: as :func:`check_run` / :func:`check_store`.
    """
    opened = open_store(store)
    if run_ids is None:
        store_report = check_store(
            cast("StoreArg", store),  # check_store takes any store its open_store opens
            trusted_keys=trusted_keys,
            require_signature=require_signature,
            allow_unsigned=allow_unsigned,
            allow_recovered=allow_recovered,
            expect_head=expect_head,
        )
        reports = list(store_report.runs)
        findings, complete = store_report.findings, store_report.complete
        head, position = store_report.head, store_report.head_position
    else:
        reports = [
            check_run(
                r,
                store,
                trusted_keys=trusted_keys,
                require_signature=require_signature,
                allow_unsigned=allow_unsigned,
                allow_recovered=allow_recovered,
            )
            for r in dict.fromkeys(run_ids)
        ]
        findings, complete = (), all(r.complete for r in reports)
        head, position = _head(opened)
    reports.sort(key=lambda r: (r.complete, r.run_id))
    runs = tuple(_run(opened, r) for r in reports)
    folder = opened.folder
    return Audit(
        store=str(folder) if folder is not None else opened.url,
        scope="all" if run_ids is None else "runs",
        complete=complete and bool(reports),
        head=head,
        head_position=position,
        expected_head=expect_head,
        findings=tuple(findings),
        runs=runs,
        generated_ms=generated_ms,
        generator=generator,
    )


def _head(store: Store) -> tuple[str | None, int]:
    """The chain head's digest and position as the store keeps it (``(None, 0)`` for
    none, or a damaged one: ``check_store`` judges it)."""
    folder = store.folder
    if folder is not None:
        stored = read_head(StoreLayout(folder))
        return (stored.digest, stored.position) if stored else (None, 0)
    try:
        remote, _ = read_remote_head(store)
    except AgcError:
        return None, 0
    return (remote.digest, remote.position) if remote is not None else (None, 0)


def _run(store: Store, report: RunReport) -> AuditRun:
    """One run's entry: its timeline and what its manifest says it was."""
    try:
        found = store.get(manifest_path(report.run_id), max_bytes=MAX_MANIFEST_BYTES)
        manifest = (
            None
            if found is None
            else RunManifest.from_bytes(found[0], expected_run_id=report.run_id)
        )
    except (AgcError, OSError):
        manifest = None  # the report's findings say what is wrong with it
    about = dict(manifest.attributes or {}) if manifest is not None else {}
    events = tuple(_events(store, report, manifest, about))
    return AuditRun(report, events, MappingProxyType(about))


def _events(
    store: Store, report: RunReport, manifest: RunManifest | None, about: Mapping[str, Any]
) -> Iterable[TimelineEvent]:
    run_id = report.run_id
    first = _first_record_ms(store, run_id)
    if first is not None:
        yield TimelineEvent(first, run_id, "first-record")
    for key, event in (("first_agent_ts", "agent-first"), ("last_agent_ts", "agent-last")):
        at = _agent_ms(about.get(key))
        if at is not None:
            yield TimelineEvent(at, run_id, event, str(about.get("client") or "agent"))
    if manifest is None:
        return
    for kind, seal in manifest.artifacts.items():
        for segment in seal.segments:
            at = segment.get("sealed_at_ms")
            if isinstance(at, int):
                yield TimelineEvent(at, run_id, "sealed", f"{kind}, earlier segment")
        if seal.reopened_at_ms is not None:
            yield TimelineEvent(seal.reopened_at_ms, run_id, "reopened", kind)
        if seal.closed:
            event = "recovered" if seal.recovered else "sealed"
            yield TimelineEvent(
                seal.sealed_at_ms, run_id, event, f"{kind}, {counted(seal.records, 'record')}"
            )


def _agent_ms(value: object) -> int | None:
    """An agent's ISO 8601 timestamp as Unix ms (``Z`` or an offset; naive is UTC)."""
    if not isinstance(value, str):
        return None
    try:
        at = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if at.tzinfo is None:
        at = at.replace(tzinfo=UTC)
    ms = int(at.timestamp() * 1000)
    # A time a report can show: from 1970 to the end of year 9999 UTC (an offset can
    # put a valid year-1 text before year 1 UTC, which nothing can render).
    return ms if 0 <= ms <= _LAST_MS else None


def _first_record_ms(store: Store, run_id: str) -> int | None:
    """The ``ts`` of the transcript's first record, if it can be read."""
    try:
        with store.open(artifact_path(run_id, "transcript")) as opened:
            if opened is None:
                return None
            chunks, _ = opened
            head = b""
            for chunk in chunks:
                head += chunk
                if b"\n" in head or len(head) >= _FIRST_LINE_LIMIT:
                    break
        ts = json.loads(head.split(b"\n", 1)[0]).get("ts")
    except (AgcError, OSError, ValueError, AttributeError):
        return None
    return ts if isinstance(ts, int) and not isinstance(ts, bool) and ts >= 0 else None


# -- rendering (pure) --------------------------------------------------------------------


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


_CSS: Final = """
:root { color-scheme: light; --tampered: #b3261e; --unverified: #c75300; --unfinished: #e0b400;
        --ok: #1e6b34; --warn: #8a5a00; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0;
       color: #1b1b1b; background: #fafafa; }
header, main, footer { max-width: 1100px; margin: 0 auto; padding: 16px 24px; }
header { border-bottom: 4px solid var(--ok); background: #fff; }
header.tampered { border-bottom-color: var(--tampered); }
header.unverified { border-bottom-color: var(--unverified); }
header.unfinished { border-bottom-color: var(--unfinished); }
h1 { font-size: 24px; margin: 0 0 6px; }
h2 { font-size: 18px; margin: 24px 0 8px; }
.summary { font-size: 18px; font-weight: 600; margin: 4px 0 12px; }
.summary.tampered { color: var(--tampered); }
.summary.unverified { color: var(--unverified); }
.summary.unfinished { color: #7a6200; }
.summary.ok { color: var(--ok); }
p.verdicts { margin: 0 0 12px; }
p.verdicts .badge { margin-right: 6px; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dt { font-weight: 600; }
dd { margin: 0; }
code, .digest { font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", monospace;
                overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { text-align: left; vertical-align: top; padding: 6px 8px; border-bottom: 1px solid #ddd; }
th { background: #eee; }
.badge { display: inline-block; padding: 1px 8px; border-radius: 10px; color: #fff;
         font-weight: 600; font-size: 13px; }
.badge.tampered { background: var(--tampered); }
.badge.unverified { background: var(--unverified); }
.badge.unfinished { background: var(--unfinished); color: #1b1b1b; }
.badge.ok { background: var(--ok); }
tr.tampered td:first-child, section.run.tampered { border-left: 4px solid var(--tampered); }
tr.unverified td:first-child, section.run.unverified { border-left: 4px solid var(--unverified); }
tr.unfinished td:first-child, section.run.unfinished { border-left: 4px solid var(--unfinished); }
tr.ok td:first-child, section.run.ok { border-left: 4px solid var(--ok); }
ul.findings { margin: 0; padding-left: 18px; }
li.error.tampered { color: var(--tampered); }
li.error.unverified { color: var(--unverified); }
li.error.unfinished { color: #7a6200; }
li.warning { color: var(--warn); }
dl.legend { display: grid; grid-template-columns: max-content 1fr; gap: 4px 12px;
            margin: 12px 0 0; font-size: 14px; }
section.run { background: #fff; border: 1px solid #ddd; margin: 12px 0; padding: 8px 12px; }
ol.timeline { list-style: none; padding: 0; border-left: 2px solid #bbb; margin-left: 8px; }
ol.timeline li { padding: 2px 0 2px 12px; position: relative; }
ol.timeline li::before { content: ""; position: absolute; left: -6px; top: 9px; width: 10px;
                         height: 10px; border-radius: 50%; background: #888; }
ol.timeline li.tampered::before { background: var(--tampered); }
ol.timeline li.unverified::before { background: var(--unverified); }
ol.timeline li.unfinished::before { background: var(--unfinished); }
ol.timeline li.ok::before { background: var(--ok); }
footer { color: #666; font-size: 13px; }
"""


def _verdict(report: RunReport) -> str:
    return "complete" if report.complete else "incomplete"


def _badge(verdict: Verdict, *, ok: str | None = None) -> str:
    """The verdict word on its category's colour (``ok`` replaces ``complete``)."""
    word = ok if ok is not None and verdict.ok else verdict.word
    return f'<span class="badge {verdict.category}">{_e(word)}</span>'


def _state(verdict: Verdict) -> str:
    """The classes of a failing or passing element: ``ok``, or ``fail <category>``."""
    return "ok" if verdict.ok else f"fail {verdict.category}"


def _findings_list(findings: Sequence[Finding[Any]]) -> str:
    if not findings:
        return '<p class="none">no findings</p>'
    items = "".join(
        f'<li class="{_e(f.severity)} {category_of(f.code)}" data-code="{_e(f.code)}">'
        f"<code>{_e(f.code)}</code> {_e(finding_text(f, code=False))}{_digests_html(f)}</li>"
        for f in findings
    )
    return f'<ul class="findings">{items}</ul>'


def _digests(finding: Finding[Any]) -> tuple[str, str] | None:
    """The digest the seal expected and the one observed, when a finding gives both."""
    expected, actual = finding.expected or {}, finding.actual or {}
    want, got = expected.get("digest"), actual.get("digest")
    if isinstance(want, str) and isinstance(got, str):
        return want, got
    return None


def _digests_html(finding: Finding[Any]) -> str:
    pair = _digests(finding)
    if pair is None:
        return ""
    return (
        f'<br>expected <code class="digest" data-expected>{_e(pair[0])}</code>'
        f'<br>observed <code class="digest" data-observed>{_e(pair[1])}</code>'
    )


def _about_html(about: Mapping[str, Any]) -> str:
    """What the run was (its manifest's attributes), as a definition list."""
    if not about:
        return ""
    rows = "".join(
        f'<dt>{_e(str(key).replace("_", " "))}</dt><dd data-about="{_e(key)}">'
        f"<code>{_e(value if isinstance(value, str) else json.dumps(value))}</code></dd>"
        for key, value in about.items()
    )
    return f'<dl class="facts about">{rows}</dl>'


def _session_cell(about: Mapping[str, Any]) -> str:
    """``client, model, N tool calls (F failed)`` from what a captured run says it was."""
    parts = [str(about[key]) for key in ("client", "model") if about.get(key)]
    calls, failed = about.get("tool_calls"), about.get("tool_failures")
    if isinstance(calls, int):
        parts.append(counted(calls, "tool call") + (f" ({failed} failed)" if failed else ""))
    return ", ".join(parts)


def _summary(audit: Audit) -> str:
    runs_total = len(audit.runs)
    if not audit.runs:
        return "INCOMPLETE: no run to verify (an empty store is never verified)"
    if audit.complete:
        return f"COMPLETE: all {runs_total} run(s) verified"
    if audit.findings and not audit.failing:
        return "INCOMPLETE: the store itself has findings"
    return f"INCOMPLETE: {audit.failing} of {runs_total} run(s) failed"


def _category(audit: Audit) -> str:
    """The page's colour: ``ok``, or its most severe run verdict or store finding."""
    if audit.complete:
        return "ok"
    worst = most_severe(
        [run.report.verdict.category for run in audit.runs]
        + [category_of(f.code) for f in audit.findings if f.severity == "error"]
    )
    return "unfinished" if worst == "ok" else worst  # no run at all: never verified


def audit_html(audit: Audit) -> str:
    """The report as one self-contained HTML5 page (UTF-8, no external resource).

    Each run's verdict is its word and category (:mod:`agc.integrity._verdict`), shown
    as a badge in the category's colour; the header counts runs per verdict and a
    legend says what each colour means.
    """
    category = _category(audit)
    state = "ok" if audit.complete else f"fail {category}"
    head = (
        f'<code class="digest">{_e(audit.head)}</code> at position {audit.head_position}'
        if audit.head
        else "(empty chain)"
    )
    facts = [
        ("Store", f"<code>{_e(audit.store)}</code>"),
        ("Scope", "every run and the store chain" if audit.scope == "all" else "named runs"),
        ("Chain head", head),
    ]
    if audit.expected_head:
        facts.append(("Expected head", f'<code class="digest">{_e(audit.expected_head)}</code>'))
    facts.append(
        (
            "Generated",
            f'<time datetime="{_iso(audit.generated_ms)}">'
            f"{_iso(audit.generated_ms)}</time> by {_e(audit.generator)}",
        )
    )
    facts_html = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    counts = count_verdicts(run.report.verdict for run in audit.runs)
    verdicts = "".join(
        f'<span class="badge {v.category}" data-verdict-word="{_e(v.word)}" '
        f'data-count="{count}">{count} {_e(v.word)}</span>'
        for v, count in counts.items()
    )

    rows = []
    for run in audit.runs:
        r = run.report
        verdict = r.verdict
        rows.append(
            f'<tr class="run {_state(verdict)}" data-run="{_e(r.run_id)}" '
            f'data-verdict="{_verdict(r)}" data-verdict-word="{_e(verdict.word)}" '
            f'data-verdict-category="{verdict.category}">'
            f'<td><a href="#run-{_e(r.run_id)}"><code>{_e(r.run_id)}</code></a></td>'
            f"<td>{_badge(verdict)}</td>"
            f"<td>{_e(_session_cell(run.about))}</td>"
            f"<td>{_e(r.signature)}</td>"
            f"<td>{sum(a.records or 0 for a in r.artifacts)}</td>"
            f"<td>{len(r.errors)}</td></tr>"
        )
    table = (
        '<table id="runs-table"><thead><tr><th>Run</th><th>Verdict</th><th>Session</th>'
        "<th>Signature</th><th>Records</th><th>Findings</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
        if rows
        else '<p class="none">no runs</p>'
    )
    legend = "".join(
        f'<dt><span class="badge {name}">{name}</span></dt><dd>{_e(meaning)}</dd>'
        for name, meaning in CATEGORIES.items()
    )

    details = []
    for run in audit.runs:
        r = run.report
        verdict = r.verdict
        artifacts = "".join(
            f'<tr data-artifact="{_e(a.kind)}"><td>{_e(a.kind)}</td>'
            f"<td>{_badge(verdict_of(a.findings), ok='OK')}</td>"
            f"<td>{'' if a.records is None else a.records}</td>"
            f"<td>{'' if a.bytes is None else a.bytes}</td>"
            f'<td><code class="digest">{_e(a.algorithm or "")} {_e(a.digest or "")}</code>'
            "</td></tr>"
            for a in r.artifacts
        )
        key = f'<code class="digest">{_e(r.key_id)}</code>' if r.key_id else "none"
        about = _about_html(run.about)
        details.append(
            f'<section class="run {_state(verdict)}" id="run-{_e(r.run_id)}" '
            f'data-run="{_e(r.run_id)}">'
            f"<h3><code>{_e(r.run_id)}</code> {_badge(verdict)}</h3>"
            f"{about}<p>Signature: {_e(r.signature)}; key id: {key}</p>"
            '<table class="artifacts"><thead><tr><th>Artifact</th><th></th><th>Records</th>'
            f"<th>Bytes</th><th>Digest</th></tr></thead><tbody>{artifacts}</tbody></table>"
            f"{_findings_list(r.findings)}</section>"
        )

    run_categories = {run.report.run_id: run.report.verdict.category for run in audit.runs}
    timeline = "".join(
        f'<li class="{run_categories.get(e.run_id, "tampered")}" data-run="{_e(e.run_id)}" '
        f'data-event="{_e(e.event)}"><time datetime="{_iso(e.at_ms)}">{_iso(e.at_ms)}</time> '
        f"<code>{_e(e.run_id)}</code> {_e(e.event)}"
        + (f" ({_e(e.detail)})" if e.detail else "")
        + "</li>"
        for e in audit.timeline
    )
    store_findings = (
        f'<section id="store-findings"><h2>Store findings</h2>'
        f"{_findings_list(audit.findings)}</section>"
        if audit.scope == "all"
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>agc audit report: {_e(audit.store)}</title>"
        f"<style>{_CSS}</style></head>\n<body>"
        f'<header class="{state}"><h1>agc audit report</h1>'
        f'<p class="summary {state}" id="summary" '
        f'data-complete="{str(audit.complete).lower()}">{_e(_summary(audit))}</p>'
        f'<p class="verdicts" id="verdicts">{verdicts}</p>'
        f'<dl class="facts">{facts_html}</dl></header>\n'
        f'<main><section id="runs"><h2>Runs (failing first)</h2>{table}'
        f'<dl class="legend" id="legend">{legend}</dl></section>\n'
        f"{store_findings}\n"
        f'<section id="details"><h2>Evidence per run</h2>{"".join(details)}</section>\n'
        f'<section id="timeline"><h2>Timeline</h2><ol class="timeline">{timeline}</ol>'
        "</section></main>\n"
        "<footer>Made by <code>agc report</code>. Digests are BLAKE3 or SHA-256 of the "
        "files' bytes; check a file with <code>b3sum --check</code> and the whole store "
        "with <code>agc-verify --all</code>.</footer>\n"
        "</body></html>\n"
    )


CSV_COLUMNS: Final = (
    "run_id",
    "verdict",
    "signature",
    "key_id",
    "transcript_records",
    "transcript_bytes",
    "transcript_digest",
    "tool_events_records",
    "tool_events_bytes",
    "tool_events_digest",
    "finding_codes",
    "findings",
    "sealed_at",
    "store",
    "chain_head",
    "verdict_word",
    "verdict_category",
    "client",
    "session_id",
    "model",
    "project",
    "first_agent_ts",
    "last_agent_ts",
    "tool_calls",
    "tool_failures",
    "expected_digest",
    "observed_digest",
)
_ABOUT_COLUMNS: Final = CSV_COLUMNS[
    CSV_COLUMNS.index("client") : CSV_COLUMNS.index("expected_digest")
]
_FORMULA_START: Final = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(_FORMULA_START) else text


def audit_csv(audit: Audit) -> str:
    """One row per run (failing first), columns :data:`CSV_COLUMNS`; RFC 4180 quoting.

    ``verdict`` stays ``complete``/``incomplete``; ``verdict_word`` and
    ``verdict_category`` name the run's verdict as ``agc-verify`` and the HTML page do.
    Then what a captured session's manifest says it was (``client`` … ``tool_failures``,
    empty for another run), and the digest the seal expected and the one observed for
    the first error that gives both. New columns are added at the end, so earlier ones
    keep their place.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(CSV_COLUMNS)
    for run in audit.runs:
        r = run.report
        by_kind = {a.kind: a for a in r.artifacts}
        sealed = [e.at_ms for e in run.events if e.event in {"sealed", "recovered"}]
        row: list[Any] = [r.run_id, _verdict(r), r.signature, r.key_id]
        for kind in ("transcript", "tool-events"):
            artifact = by_kind.get(kind)
            row += (
                [artifact.records, artifact.bytes, artifact.digest]
                if artifact is not None
                else [None, None, None]
            )
        verdict = r.verdict
        row += [
            ";".join(f.code for f in r.findings),
            "; ".join(finding_text(f, code=False) for f in r.findings),
            _iso(max(sealed)) if sealed else None,
            audit.store,
            audit.head,
            verdict.word,
            verdict.category,
        ]
        row += [run.about.get(column) for column in _ABOUT_COLUMNS]
        failed = next((pair for f in r.errors if (pair := _digests(f)) is not None), None)
        row += list(failed) if failed is not None else [None, None]
        writer.writerow([_cell(value) for value in row])
    return buffer.getvalue()
