"""The cost of checking one run against the store chain, as the store grows.

``agc-verify RUN`` reads the run's links from ``audit/chain.jsonl``: its time grows
with the log (a byte search over it), not with the run. This measures a 1-record run's
check in stores whose chain holds 1, 1,000 and 100,000 links, as ratios against the
1-link store measured in the same process (``check_run()``, median of repeats), and the
whole ``agc-verify`` command (process start included) once per size.

The other runs of a large store are links only (their files are not written): a
single-run check reads the run's own files, its manifest and the chain, never another
run's files, so the chain is the only part of the store that grows its cost.

Usage: ``python -m benchmarks.run_chain_scale [--sizes 1,1000,100000] [--repeat 30]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agc._core.store import StoreLayout
from agc.integrity._chain import manifest_digest
from agc.integrity._store_io import read_manifest
from agc.integrity._verify import check_run
from agc.integrity._writer import open_run


def _store_of(root: Path, links: int) -> Path:
    """A store whose chain holds ``links - 1`` other runs' links, then the run ``one``
    (one transcript record), linked last."""
    store = root / f"store-{links}"
    layout = StoreLayout.at(store)
    layout.audit_dir.mkdir(parents=True)
    prev = None
    with (layout.audit_dir / "chain.jsonl").open("wb") as log:
        for position in range(1, links):
            digest = hashlib.sha256(str(position).encode()).hexdigest()
            line = {
                "position": position,
                "run_id": f"run-{position:06d}",
                "manifest_digest": digest,
                "prev": prev,
            }
            log.write(json.dumps(line, separators=(",", ":")).encode() + b"\n")
            prev = digest
    if links > 1:
        head = {"position": links - 1, "digest": prev, "run_id": f"run-{links - 1:06d}"}
        (layout.audit_dir / "chain-head.json").write_text(json.dumps(head) + "\n")
    with open_run("one", store=store) as run:
        run.transcript.write({"role": "user", "content": "hello"})
    manifest = read_manifest(layout, "one")
    assert manifest is not None
    assert manifest.chain == {"position": links, "prev": prev}
    assert manifest_digest(manifest)
    return store


def _median_ms(store: Path, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        report = check_run("one", store)
        times.append((time.perf_counter() - start) * 1000)
        assert report.complete, report.missing
    return statistics.median(times)


def _command_ms(store: Path, repeat: int) -> float:
    command = Path(sys.executable).with_name("agc-verify")
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run(
            [str(command), "one", "--store", str(store)], capture_output=True, check=False
        )
        times.append((time.perf_counter() - start) * 1000)
        assert done.returncode == 0, done.stderr
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1,1000,100000")
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]
    root = Path(tempfile.mkdtemp(prefix="agc-chain-scale-"))
    try:
        rows = []
        for links in sizes:
            store = _store_of(root, links)
            log = (store / "audit/chain.jsonl").stat().st_size
            rows.append((links, log, _median_ms(store, args.repeat), _command_ms(store, 7)))
        base = rows[0][2]
        print("| chain links | chain.jsonl bytes | check_run() ms | ratio | agc-verify ms |")
        print("|---:|---:|---:|---:|---:|")
        for links, log, library, command in rows:
            print(f"| {links:,} | {log:,} | {library:.2f} | {library / base:.2f} | {command:.1f} |")
    finally:
        shutil.rmtree(root)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
