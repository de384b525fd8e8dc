"""``python -m benchmarks``: run the suite, write ``<name>.json`` and ``<name>.md``.

Examples::

    python -m benchmarks                       # full: 1 GiB, 7 rounds -> results/latest.*
    python -m benchmarks --quick               # smoke test, tens of seconds -> results/tmp/quick.*
    python -m benchmarks --size 256MiB --only digest,verify

Exit status: 0 when the run completed (targets may FAIL: they are reported, not
asserted), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import re
import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from benchmarks.data import SEED, record_sizes
from benchmarks.machine import machine_facts
from benchmarks.report import Section, write_results
from benchmarks.suites import SUITES, Context

__all__ = ["main", "parse_size", "run_suite"]

RESULTS_DIR = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parent.parent / "README.md"
README_START = "<!-- benchmarks:start (written by make bench) -->"
README_END = "<!-- benchmarks:end -->"
_UNITS = {
    "": 1,
    "B": 1,
    "K": 1000,
    "KB": 1000,
    "KIB": 1024,
    "M": 1000**2,
    "MB": 1000**2,
    "MIB": 1024**2,
    "G": 1000**3,
    "GB": 1000**3,
    "GIB": 1024**3,
}


def parse_size(text: str) -> int:
    """``"1GiB"`` -> 1073741824, ``"64MB"`` -> 64000000, ``"4096"`` -> 4096.

    Raises:
        argparse.ArgumentTypeError: not a size, or below 1 MiB.
    """
    match = re.fullmatch(r"\s*(\d+)\s*([A-Za-z]*)\s*", text)
    if match is None or match.group(2).upper() not in _UNITS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (e.g. 1GiB, 256MiB, 64MB)")
    size = int(match.group(1)) * _UNITS[match.group(2).upper()]
    if size < 1024**2:
        raise argparse.ArgumentTypeError(f"size {text!r} is below 1 MiB")
    return size


def run_suite(
    *,
    quick: bool,
    size: int,
    rounds: int,
    only: Sequence[str],
    workdir: Path | None,
    command: str,
) -> dict[str, Any]:
    """Run the chosen benchmarks and return the results document (see docs/benchmarks.md)."""
    work = Path(tempfile.mkdtemp(prefix="agc-bench-", dir=workdir))
    sizes = record_sizes()
    ctx = Context(work=work, size=size, rounds=rounds, quick=quick, sizes=sizes)
    sections: list[Section] = []
    started = time.perf_counter()
    try:
        for name in only:
            print(f"[bench] {name} …", file=sys.stderr, flush=True)
            begun = time.perf_counter()
            section = SUITES[name](ctx)
            section.extra["seconds"] = round(time.perf_counter() - begun, 1)
            sections.append(section)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "schema_version": 1,
        "command": command,
        "config": {
            "quick": quick,
            "size_bytes": size,
            "rounds": rounds,
            "seed": SEED,
            "benchmarks": list(only),
            "workdir": str(workdir or Path(tempfile.gettempdir())),
            "seconds": round(time.perf_counter() - started, 1),
        },
        "machine": machine_facts(),
        "record_sizes": sizes.summary(),
        "sections": [asdict(section) for section in sections],
        "targets": [asdict(t) for section in sections for t in section.targets],
    }


def update_readme(readme: Path, markdown: str) -> bool:
    """Replace the text between the README's benchmark markers; False if none are found."""
    text = readme.read_text(encoding="utf-8")
    start = text.find(README_START)
    end = text.find(README_END)
    if start < 0 or end < start:
        return False
    head = text[: start + len(README_START)]
    readme.write_text(f"{head}\n{markdown.rstrip()}\n{text[end:]}", encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run, write the JSON and Markdown files; return the exit status."""
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--quick", action="store_true", help="small smoke-test version")
    parser.add_argument(
        "--size",
        type=parse_size,
        default=None,
        help="large-file size (default 1GiB; 32MiB with --quick)",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="timed rounds (default 7; 3 quick)"
    )
    parser.add_argument(
        "--only", default=",".join(SUITES), help=f"comma-separated subset of {','.join(SUITES)}"
    )
    parser.add_argument("--out", type=Path, default=None, help="results folder")
    parser.add_argument("--name", default=None, help="file stem (default latest; quick: quick)")
    parser.add_argument(
        "--update-readme",
        action="store_true",
        help="also write the tables into README.md's Performance section (make bench)",
    )
    parser.add_argument(
        "--workdir",
        type=Path,
        default=None,
        help="scratch folder for generated data (default: system temp)",
    )
    args = parser.parse_args(argv)
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = [name for name in only if name not in SUITES]
    if unknown or not only:
        parser.error(f"unknown benchmark(s) {unknown}; choose from {','.join(SUITES)}")
    rounds = args.rounds if args.rounds is not None else (3 if args.quick else 7)
    if rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.workdir is not None and not args.workdir.is_dir():
        # Checked before any suite runs: tempfile would fail only once the first suite
        # asks for its scratch folder, with a traceback.
        parser.error(f"--workdir {args.workdir}: no such folder (create it first)")
    size = args.size if args.size is not None else (32 * 1024**2 if args.quick else 1024**3)
    out = args.out or (RESULTS_DIR / "tmp" if args.quick else RESULTS_DIR)
    name = args.name or ("quick" if args.quick else "latest")
    shown = ["python", "-m", "benchmarks", *(sys.argv[1:] if argv is None else argv)]
    doc = run_suite(
        quick=args.quick,
        size=size,
        rounds=rounds,
        only=only,
        workdir=args.workdir,
        command=shlex.join(shown),
    )
    json_path, md_path = write_results(doc, out, name)
    if args.update_readme and not update_readme(README, md_path.read_text(encoding="utf-8")):
        print(f"[bench] {README} has no benchmark markers; not updated", file=sys.stderr)
    for target in doc["targets"]:
        value = "—" if target["value"] is None else f"{target['value']:.2f}"
        print(f"{target['status']:4}  {target['text']}: {value}  {target['note']}", file=sys.stderr)
    print(
        f"[bench] wrote {json_path} and {md_path} in {doc['config']['seconds']} s", file=sys.stderr
    )
    return 0
