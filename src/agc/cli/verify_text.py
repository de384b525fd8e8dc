"""The human text of verify reports, kept free of typer/rich so ``agc-verify`` starts fast.

Lines are plain text; with ``color=True`` (stdout is a terminal and ``NO_COLOR`` is not
set, see :func:`use_color`) the verdict words are coloured with ANSI SGR codes.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Final, TextIO

from agc.flows import counted
from agc.integrity import (
    RunReport,
    VerdictCategory,
    category_of,
    count_verdicts,
    finding_text,
    most_severe,
    verdict_of,
)

if TYPE_CHECKING:
    from agc.integrity import StoreReport

__all__ = [
    "SGR",
    "STYLES",
    "format_report",
    "format_store",
    "paint",
    "recovery_hint",
    "store_category",
    "store_summary",
    "use_color",
]

_RESET: Final = "\x1b[0m"
_WARNING: Final = "\x1b[33m"
SGR: Final[dict[VerdictCategory, str]] = {
    "tampered": "\x1b[1;31m",  # bold red
    "unverified": "\x1b[38;5;208m",  # orange (256-colour palette)
    "unfinished": "\x1b[1;33m",  # bold yellow
    "ok": "\x1b[32m",  # green
}
"""The ANSI SGR colour of each verdict category."""
STYLES: Final[dict[VerdictCategory, str]] = {
    "tampered": "red",
    "unverified": "color(208)",
    "unfinished": "yellow",
    "ok": "green",
}
"""The same colours as rich styles (the ``--all`` table on a terminal); no bold, which
rich would keep under ``NO_COLOR``."""
_NOT_SEALED: Final = frozenset({"unsealed", "torn-tail"})


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, never when ``NO_COLOR`` is set to anything non-empty
    (no-color.org) or ``TERM`` is ``dumb``."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False
    return tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def paint(text: str, category: VerdictCategory, color: bool) -> str:
    """``text`` in the colour of a verdict category when ``color``, else as it is."""
    return f"{SGR[category]}{text}{_RESET}" if color else text


def _warn(text: str, color: bool) -> str:
    return f"{_WARNING}{text}{_RESET}" if color else text


def format_report(report: RunReport, *, color: bool = False, quiet: bool = False) -> list[str]:
    """Human lines: one per artifact (``OK`` / ``FAIL`` with each finding's code and
    reason), then a summary naming the run's verdict (:class:`agc.integrity.Verdict`).

    Digests are printed in full (compare them with ``b3sum`` or a pinned value). A
    ``FAIL`` line is coloured by its most severe finding's category, the verdict by its
    own.

    Args:
        color: colour ``OK``, ``FAIL``, warnings and the verdict (ANSI codes).
        quiet: like ``sha256sum --quiet``: only what failed; nothing for a complete run.
    """
    ok = paint("OK  ", "ok", color)
    lines: list[str] = []
    by_artifact: dict[str | None, list[str]] = {}
    # Errors first: a FAIL line leads with what failed, its warnings after.
    for finding in sorted(report.findings, key=lambda f: f.severity != "error"):
        error = finding.severity == "error"
        note = (
            finding_text(finding)
            if error
            else _warn("warning: ", color) + finding_text(finding, code=False)
        )
        by_artifact.setdefault(finding.artifact, []).append(note)
        if finding.artifact in {None, "manifest"}:
            # The run as a whole and its manifest have no OK line to hang a warning
            # under: an error is a FAIL line, a warning an indented note (never FAIL,
            # and left out by --quiet: it is not a failure).
            name = f"{finding.artifact or 'run':<12}"
            if error:
                lines.append(f"{paint('FAIL', category_of(finding.code), color)} {name} {note}")
            elif not quiet:
                lines.append(f"     {name} {note}")
    for artifact in report.artifacts:
        name = f"{artifact.kind:<12}"
        notes = by_artifact.get(artifact.kind, [])
        if artifact.ok:
            if quiet:
                continue
            facts = (
                f"{_counted(artifact.records, 'record')}, {_counted(artifact.bytes, 'byte')}, "
                f"{artifact.algorithm} {artifact.digest}"
                if artifact.digest
                else "no sealed file"
            )
            lines.append(f"{ok} {name} {facts}")
            lines.extend(f"     {name} {note}" for note in notes)
        elif notes:
            fail = paint("FAIL", verdict_of(artifact.findings).category, color)
            lines.append(f"{fail} {name} {'; '.join(notes)}")
    if quiet and report.complete:
        return lines
    verdict = report.verdict
    summary = paint(verdict.word, verdict.category, color)
    if not verdict.ok:
        summary += f" ({verdict.category}; {len(report.missing)} finding(s))"
    legacy = " (legacy store format)" if report.legacy else ""
    signature = "" if report.signature == "unsigned" else f", {report.signature}"
    lines.append(f"run {report.run_id}: {summary}{legacy}{signature}")
    return lines


def _counted(count: int | None, noun: str) -> str:
    """:func:`agc.flows.counted`, or ``? <noun>s`` for a count the report does not know."""
    return f"? {noun}s" if count is None else counted(count, noun)


def recovery_hint(report: RunReport, *, store: str | None = None) -> str | None:
    """The next step for a run that was never sealed (crashed, stopped, or still being
    written: ``agc recover`` seals what is on disk), that the store does not hold
    (``agc runs`` lists those it does), or a captured session's run sealed without its
    session file (:func:`agc.flows.session_file_hint`). ``None`` for any other report."""
    if store is not None and store.startswith("s3:/") and not store.startswith("s3://"):
        store = "s3://" + store[len("s3:/") :]  # a path collapsed the URL's double slash
    store_words = ["--store", store] if store is not None else []
    if any(f.code == "run-missing" for f in report.findings):
        return f"hint: `{shlex.join(['agc', 'runs', *store_words])}` lists the runs of the store"
    if any(
        f.code == "empty" and f.artifact == "transcript" and f.severity == "error"
        for f in report.findings
    ):
        from agc.flows import session_file_hint  # noqa: PLC0415 - an empty transcript only

        hint = session_file_hint(report.run_id, store, transcript_records=0)
        return None if hint is None else f"hint: {hint}"
    if not any(f.code in _NOT_SEALED and f.severity == "error" for f in report.findings):
        return None
    words = ["agc", "recover", report.run_id, *store_words]
    return (
        f"hint: run {report.run_id} is not sealed (stopped by a crash, Ctrl-C or a full "
        f"disk, or still being written); when no writer is left, `{shlex.join(words)}` "
        "seals what is on disk"
    )


def format_store(report: StoreReport, *, color: bool = False, quiet: bool = False) -> list[str]:
    """``--all`` as plain text: one line per run (``OK``/``FAIL``, full run id, verdict
    word, signature, then each error finding as ``code: reason``), then the store's own
    findings and a summary with the runs per verdict and the full chain head.

    Failing runs come first, each group in run-id order.
    """
    lines: list[str] = []
    for run in sorted(report.runs, key=lambda r: (r.complete, r.run_id)):
        verdict = run.verdict
        word = paint(verdict.word, verdict.category, color)
        if verdict.ok:
            if not quiet:
                lines.append(f"{paint('OK  ', 'ok', color)} {run.run_id}  {word}  {run.signature}")
        else:
            reasons = "; ".join(finding_text(f) for f in run.errors)
            fail = paint("FAIL", verdict.category, color)
            lines.append(f"{fail} {run.run_id}  {word}  {run.signature}  {reasons}")
    for finding in report.findings:
        if finding.severity == "error":
            fail = paint("FAIL", category_of(finding.code), color)
            lines.append(f"{fail} store  {finding_text(finding)}")
        elif not quiet:
            lines.append(f"{_warn('warn', color)} store  {finding_text(finding, code=False)}")
    if quiet and report.complete:
        return lines
    lines.append(store_summary(report, color=color))
    return lines


def store_category(report: StoreReport) -> VerdictCategory:
    """The colour of a store's verdict: its most severe run verdict or store finding."""
    return most_severe(
        [r.verdict.category for r in report.runs]
        + [category_of(f.code) for f in report.findings if f.severity == "error"]
    )


def store_summary(report: StoreReport, *, color: bool = False) -> str:
    """``store <path>: INCOMPLETE; 2/4 runs complete, 1 modified, 1 unsigned; chain head
    <hex> at position 4``: the runs per verdict word, most severe first."""
    total = len(report.runs)
    counts = count_verdicts(r.verdict for r in report.runs)
    good = sum(n for v, n in counts.items() if v.ok)
    verdict = paint("complete", "ok", color)
    if not report.complete:
        verdict = paint("INCOMPLETE", store_category(report), color)
    failing = "".join(
        f", {count} {paint(v.word, v.category, color)}" for v, count in counts.items() if not v.ok
    )
    return (
        f"store {report.store}: {verdict}; {good}/{total} runs complete{failing}; "
        f"chain head {report.head or '(empty)'} at position {report.head_position}"
    )
