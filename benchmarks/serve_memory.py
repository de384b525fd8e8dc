"""What a finished ``agc serve`` turn keeps in memory, per turn, after it ended.

Each turn runs one command whose output (``--output-mib`` MiB) streams in 8 KiB
``outputDelta`` reads and completes whole in ``aggregatedOutput``, through a real
:class:`agc.serve.Supervisor` with scripted sessions and no sink. Measured with
``tracemalloc``: the memory still held after ``--turns`` turns ended (and a garbage
collection), divided by the number of turns, against the output's own size (a ratio;
the sealed run is what keeps the output).

Run: ``.venv/bin/python -m benchmarks.serve_memory [--output-mib N] [--turns T]``
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import tracemalloc
from pathlib import Path

from tests.serve.fakes import Behaviour, Factory, make_supervisor

from agc.serve import ProviderEvent

__all__ = ["main"]

_LINE = "building module %05d: ok, 142 files, see src/app/mod_%d.py\n"


def _output(mib: int) -> str:
    lines, size, n = [], 0, 0
    while size < mib * 1024 * 1024:
        line = _LINE % (n, n)
        lines.append(line)
        size += len(line)
        n += 1
    return "".join(lines)


async def _turns(root: Path, output: str, turns: int) -> tuple[int, int]:
    reads = tuple(
        ProviderEvent(
            "item/commandExecution/outputDelta", {"itemId": "call_1", "delta": output[i : i + 8192]}
        )
        for i in range(0, len(output), 8192)
    )
    supervisor, _ = make_supervisor(
        root, factory=Factory(Behaviour(output=output, extra_events=reads))
    )
    await supervisor.start()
    try:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(turns):
            accepted = await supervisor.submit("build it", None)
            await supervisor.traces[accepted["traceId"]].done.wait()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
        return before, after
    finally:
        await supervisor.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-mib", type=int, default=20)
    parser.add_argument("--turns", type=int, default=3)
    args = parser.parse_args(argv)
    output = _output(args.output_mib)  # allocated before tracing: not counted
    with tempfile.TemporaryDirectory() as folder:
        tracemalloc.start()
        try:
            before, after = asyncio.run(_turns(Path(folder), output, args.turns))
        finally:
            tracemalloc.stop()
    kept = (after - before) / args.turns
    print(
        f"serve finished-turn memory: {args.turns} turns of {args.output_mib} MiB output, "
        f"kept {kept / 1024:.0f} KiB per finished turn "
        f"({kept / len(output.encode()):.4f} of the output)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
