"""Result model and its two renderings: a JSON document and a Markdown table."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from benchmarks.harness import Timing

__all__ = ["Row", "Section", "Target", "render_markdown", "write_results"]

RESULTS_SCHEMA_VERSION = 1
Status = Literal["PASS", "FAIL", "SKIP"]


@dataclass
class Row:
    """One measured (or skipped) variant.

    Attributes:
        name: the variant, e.g. ``"agc blake3, 1 thread"``.
        median_s: median wall time of the rounds (seconds).
        spread: (max - min) / median of the rounds.
        rounds: number of timed rounds.
        throughput: the figure in its unit (``GB/s``, ``records/s``, ``runs/s`` …).
        unit: the throughput's unit.
        baseline: the row this one is compared with.
        ratio: speed ratio, baseline time / this time (above 1: faster than baseline).
        peak_bytes: peak memory (tracemalloc), where measured.
        cpu_s: median CPU time (user + system seconds) of the measured process, where
            measured: on a shared machine the wall time also holds the waits for a core.
        disk_bytes: the most any round of the measured process read from the disk (not
            the page cache), where measured.
        skipped: why the row was not measured.
    """

    name: str
    median_s: float | None = None
    spread: float | None = None
    rounds: int = 0
    throughput: float | None = None
    unit: str = ""
    baseline: str | None = None
    ratio: float | None = None
    peak_bytes: int | None = None
    skipped: str | None = None
    cpu_s: float | None = None
    disk_bytes: int | None = None

    @classmethod
    def timed(
        cls,
        name: str,
        timing: Timing,
        *,
        work: float | None = None,
        unit: str = "",
        baseline: Timing | None = None,
        baseline_name: str | None = None,
    ) -> Row:
        """A row from a timing; ``work / median`` gives the throughput (e.g. bytes/1e9)."""
        median = timing.median
        return cls(
            name=name,
            median_s=median,
            spread=round(timing.spread, 3),
            rounds=len(timing.samples),
            throughput=(work / median) if work is not None and median > 0 else None,
            unit=unit,
            baseline=baseline_name,
            ratio=(baseline.median / median) if baseline is not None and median > 0 else None,
        )


@dataclass
class Target:
    """One target of the issue, judged from a ratio (never from an absolute time).

    Attributes:
        id: short id, e.g. ``"digest-1-thread"``.
        text: the target as stated, e.g. ``">= 0.9x b3sum --num-threads 1"``.
        value: the measured ratio (``None`` when skipped).
        threshold: the bound.
        op: ``">="`` or ``"<="``.
        status: ``PASS``, ``FAIL`` or ``SKIP``.
        note: why skipped, or what the figure means.
    """

    id: str
    text: str
    value: float | None
    threshold: float
    op: Literal[">=", "<="]
    status: Status = "SKIP"
    note: str = ""

    @classmethod
    def judge(
        cls,
        id: str,
        text: str,
        value: float | None,
        *,
        threshold: float,
        op: Literal[">=", "<="],
        note: str = "",
    ) -> Target:
        if value is None:
            return cls(id, text, None, threshold, op, "SKIP", note)
        ok = value >= threshold if op == ">=" else value <= threshold
        return cls(id, text, round(value, 3), threshold, op, "PASS" if ok else "FAIL", note)


@dataclass
class Section:
    """One benchmark (1-6 of the issue) and its rows and targets."""

    id: str
    title: str
    method: str
    rows: list[Row] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    skipped: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"


def _fmt_num(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def render_markdown(doc: dict[str, Any]) -> str:
    """The results as Markdown: machine, one table per benchmark, then the targets."""
    machine = doc["machine"]
    cpu = machine["cpu"]
    config = doc["config"]
    lines = [
        f"Measured {machine['date_utc']} on {cpu['model']}, {cpu['usable_cores']} cores "
        f"({', '.join(cpu['simd_flags'])}; BLAKE3 back end: {cpu['blake3_backend']}), "
        f"{machine['os']}, Python {machine['python']}, "
        + ", ".join(f"{k} {v}" for k, v in machine["packages"].items() if v)
        + ", "
        + ", ".join(f"{v}" for v in machine["tools"].values() if v)
        + ".",
        "",
        f"Command: `{doc['command']}` — file size {config['size_bytes']:,} bytes, "
        f"{config['rounds']} rounds, median; ratio = baseline time / agc time (above 1: "
        "agc faster). Files are page-cached.",
        "",
    ]
    for section in doc["sections"]:
        lines.append(f"**{section['title']}** — {section['method']}")
        lines.append("")
        if section["skipped"]:
            lines.append(f"SKIPPED: {section['skipped']}")
            lines.append("")
            continue
        lines.append("| variant | median | spread | throughput | vs | ratio |")
        lines.append("|---|---:|---:|---:|---|---:|")
        for row in section["rows"]:
            if row["skipped"]:
                lines.append(f"| {row['name']} | skipped: {row['skipped']} | | | | |")
                continue
            throughput = (
                f"{_fmt_num(row['throughput'])} {row['unit']}" if row["throughput"] else "—"
            )
            if row["peak_bytes"] is not None:
                throughput += f", peak {row['peak_bytes'] / 2**20:.1f} MiB"
            if row.get("cpu_s") is not None:
                throughput += f", cpu {row['cpu_s']:.2f} s"
            if (row.get("disk_bytes") or 0) >= 1e6:  # not a few blocks of the interpreter's
                throughput += f", {row['disk_bytes'] / 1e6:,.0f} MB read from disk"
            ratio = f"{row['ratio']:.2f}x" if row["ratio"] is not None else ""
            spread = f"{row['spread'] * 100:.0f}%" if row["spread"] is not None else ""
            lines.append(
                f"| {row['name']} | {_fmt_time(row['median_s'])} | {spread} | {throughput} "
                f"| {row['baseline'] or ''} | {ratio} |"
            )
        lines.append("")
    lines.append("**Targets** (from ratios measured in this run)")
    lines.append("")
    lines.append("| target | measured | status | note |")
    lines.append("|---|---:|---|---|")
    for target in doc["targets"]:
        value = f"{target['value']:.2f}" if target["value"] is not None else "—"
        lines.append(f"| {target['text']} | {value} | {target['status']} | {target['note']} |")
    lines.append("")
    return "\n".join(lines)


def write_results(doc: dict[str, Any], out_dir: Path, name: str) -> tuple[Path, Path]:
    """Write ``<name>.json`` and ``<name>.md`` into ``out_dir``; return both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path = out_dir / f"{name}.json"
    md_path = out_dir / f"{name}.md"
    json_path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(doc), encoding="utf-8")
    return json_path, md_path


def section_to_dict(section: Section) -> dict[str, Any]:
    """A section as plain JSON data."""
    return asdict(section)
