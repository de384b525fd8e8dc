"""The human text of verify reports, kept free of typer/rich so ``agc-verify`` starts fast.

Lines are plain text; with ``color=True`` (stdout is a terminal and ``NO_COLOR`` is not
set, see :func:`use_color`) the verdict words are coloured with ANSI SGR codes.
"""

from __future__ import annotations

import os
import shlex
from typing import TYPE_CHECKING, Final, TextIO

from agc.integrity._verify import RunReport

if TYPE_CHECKING:
    from agc._core.report import Finding
    from agc.integrity._store_verify import StoreReport

__all__ = [
    "described",
    "format_report",
    "format_store",
    "recovery_hint",
    "store_summary",
    "use_color",
]

_GREEN: Final = "\x1b[32m"
_RED: Final = "\x1b[1;31m"
_YELLOW: Final = "\x1b[33m"
_RESET: Final = "\x1b[0m"
_NOT_SEALED: Final = frozenset({"unsealed", "torn-tail"})


def use_color(stream: TextIO) -> bool:
    """Colour only on a terminal, never when ``NO_COLOR`` is set to anything non-empty
    (no-color.org) or ``TERM`` is ``dumb``."""
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # closed or replaced stream
        return False
    return tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def described(finding: Finding[str]) -> str:
    """A finding's message, and where the change begins when the finding says
    (``transcript checksum mismatch (lines 2001-3000)``)."""
    if finding.lines is None:
        return finding.message
    first, last = finding.lines
    return f"{finding.message} ({f'line {first}' if first == last else f'lines {first}-{last}'})"


def _paint(text: str, code: str, color: bool) -> str:
    return f"{code}{text}{_RESET}" if color else text


def format_report(report: RunReport, *, color: bool = False, quiet: bool = False) -> list[str]:
    """Human lines: one per artifact (``OK`` / ``FAIL`` with the reason), then a summary.

    Digests are printed in full (compare them with ``b3sum`` or a pinned value).

    Args:
        color: colour ``OK``, ``FAIL``, warnings and the verdict (ANSI codes).
        quiet: like ``sha256sum --quiet``: only what failed; nothing for a complete run.
    """
    ok = _paint("OK  ", _GREEN, color)
    fail = _paint("FAIL", _RED, color)
    lines: list[str] = []
    by_artifact: dict[str | None, list[str]] = {}
    for finding in report.findings:
        prefix = "" if finding.severity == "error" else _paint("warning: ", _YELLOW, color)
        by_artifact.setdefault(finding.artifact, []).append(prefix + described(finding))
        if finding.artifact in {None, "manifest"}:
            # The run as a whole and its manifest have no OK line to hang a warning
            # under: an error is a FAIL line, a warning an indented note (never FAIL,
            # and left out by --quiet: it is not a failure).
            name = f"{finding.artifact or 'run':<12}"
            if finding.severity == "error":
                lines.append(f"{fail} {name} {described(finding)}")
            elif not quiet:
                lines.append(f"     {name} {prefix}{described(finding)}")
    for artifact in report.artifacts:
        name = f"{artifact.kind:<12}"
        notes = by_artifact.get(artifact.kind, [])
        if artifact.ok:
            if quiet:
                continue
            facts = (
                f"{artifact.records} records, {artifact.bytes} bytes, "
                f"{artifact.algorithm} {artifact.digest}"
                if artifact.digest
                else "no sealed file"
            )
            lines.append(f"{ok} {name} {facts}")
            lines.extend(f"     {name} {note}" for note in notes)
        elif notes:
            lines.append(f"{fail} {name} {'; '.join(notes)}")
    if quiet and report.complete:
        return lines
    errors = len(report.missing)
    verdict = (
        _paint("complete", _GREEN, color)
        if report.complete
        else _paint(f"INCOMPLETE ({errors} finding(s))", _RED, color)
    )
    legacy = " (legacy store format)" if report.legacy else ""
    signature = "" if report.signature == "unsigned" else f", {report.signature}"
    lines.append(f"run {report.run_id}: {verdict}{legacy}{signature}")
    return lines


def recovery_hint(report: RunReport, *, store: str | None = None) -> str | None:
    """The next step for a run that was never sealed (crashed, stopped, or still being
    written: ``agc recover`` seals what is on disk) or that the store does not hold
    (``agc runs`` lists those it does). ``None`` for any other report."""
    store_words = ["--store", store] if store is not None else []
    if any(f.code == "run-missing" for f in report.findings):
        return f"hint: `{shlex.join(['agc', 'runs', *store_words])}` lists the runs of the store"
    if not any(f.code in _NOT_SEALED and f.severity == "error" for f in report.findings):
        return None
    words = ["agc", "recover", report.run_id, *store_words]
    return (
        f"hint: run {report.run_id} is not sealed (stopped by a crash, Ctrl-C or a full "
        f"disk, or still being written); when no writer is left, `{shlex.join(words)}` "
        "seals what is on disk"
    )


def format_store(report: StoreReport, *, color: bool = False, quiet: bool = False) -> list[str]:
    """``--all`` as plain text: one line per run (full run id, verdict, signature,
    findings), then the store's own findings and a summary with the full chain head.

    Failing runs come first, each group in run-id order.
    """
    ok = _paint("OK  ", _GREEN, color)
    fail = _paint("FAIL", _RED, color)
    lines: list[str] = []
    for run in sorted(report.runs, key=lambda r: (r.complete, r.run_id)):
        if run.complete:
            if not quiet:
                lines.append(f"{ok} {run.run_id}  {run.signature}")
        else:
            errors = "; ".join(described(f) for f in run.errors)
            lines.append(f"{fail} {run.run_id}  {run.signature}  {errors}")
    for finding in report.findings:
        if finding.severity == "error":
            lines.append(f"{fail} store  {finding.message}")
        elif not quiet:
            lines.append(f"{_paint('warn', _YELLOW, color)} store  {finding.message}")
    if quiet and report.complete:
        return lines
    lines.append(store_summary(report, color=color))
    return lines


def store_summary(report: StoreReport, *, color: bool = False) -> str:
    """``store <path>: complete; 3/3 runs complete; chain head <hex> at position 3``."""
    total = len(report.runs)
    good = sum(r.complete for r in report.runs)
    verdict = (
        _paint("complete", _GREEN, color) if report.complete else _paint("INCOMPLETE", _RED, color)
    )
    return (
        f"store {report.store}: {verdict}; {good}/{total} runs complete; "
        f"chain head {report.head or '(empty)'} at position {report.head_position}"
    )
