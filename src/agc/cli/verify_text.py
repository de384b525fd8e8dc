"""The human text of a verify report, kept free of typer/rich so ``agc-verify`` starts fast."""

from __future__ import annotations

from agc.integrity._verify import RunReport

__all__ = ["format_report"]


def format_report(report: RunReport) -> list[str]:
    """Human lines: one per artifact (``OK`` / ``FAIL`` with the reason), then a summary."""
    lines: list[str] = []
    by_artifact: dict[str | None, list[str]] = {}
    for finding in report.findings:
        prefix = "" if finding.severity == "error" else "warning: "
        by_artifact.setdefault(finding.artifact, []).append(prefix + finding.message)
    for note in by_artifact.get("manifest", []):
        lines.append(f"FAIL manifest     {note}")
    for artifact in report.artifacts:
        name = f"{artifact.kind:<12}"
        notes = by_artifact.get(artifact.kind, [])
        if artifact.ok:
            facts = (
                f"{artifact.records} records, {artifact.bytes} bytes, "
                f"{artifact.algorithm} {artifact.digest[:16]}…"
                if artifact.digest
                else "no sealed file"
            )
            lines.append(f"OK   {name} {facts}")
            lines.extend(f"     {name} {note}" for note in notes)
        else:
            lines.append(f"FAIL {name} {'; '.join(notes)}")
    errors = len(report.missing)
    verdict = "complete" if report.complete else f"INCOMPLETE ({errors} finding(s))"
    legacy = " (legacy store format)" if report.legacy else ""
    signature = "" if report.signature == "unsigned" else f", {report.signature}"
    lines.append(f"run {report.run_id}: {verdict}{legacy}{signature}")
    return lines
