"""What holding streamed deltas costs, as a ratio against a baseline measured in the same run.

Baseline: :func:`agc._core.redact.redact_text` of each delta on its own (what ``agc
serve`` did per event before it held an item's deltas). Measured:
:class:`agc.serve._stream.DeltaHold` taking the same deltas and the item's completion
(the joined text redacted at the completion, and at each 64 KiB bound up to a clean
cut). Two streams: a command's output of ``--output-mib`` MiB in 8 KiB reads (a build
log, no secret), and a model reply of 4,000 characters in 5-character deltas.

Run: ``.venv/bin/python -m benchmarks.serve_stream [--output-mib N] [--repeat R]``
"""

from __future__ import annotations

import argparse
import functools

from agc._core.redact import redact_text
from agc.serve._stream import DeltaHold
from benchmarks.harness import best_of

__all__ = ["main"]

_LINE = "building module %05d: ok, 142 files, token budget 12, see src/app/key_%d.py\n"


def _pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def _each(pieces: list[str]) -> None:
    for piece in pieces:
        redact_text(piece)


def _held(method: str, pieces: list[str]) -> None:
    hold = DeltaHold()
    for piece in pieces:
        hold.accept(method, {"itemId": "i", "delta": piece}, "notification")
    hold.accept("item/completed", {"item": {"id": "i"}}, "notification")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--output-mib", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    output = ""
    index = 0
    while len(output) < args.output_mib * 1_048_576:
        output += "".join(_LINE % (i, i) for i in range(index, index + 1000))
        index += 1000
    reply = ("The tests pass; the token budget is fine and the config key path is set. " * 60)[
        :4000
    ]
    cases = [
        ("command output, 8 KiB reads", "item/commandExecution/outputDelta", output, 8192),
        ("model reply, 5-char deltas", "item/agentMessage/delta", reply, 5),
    ]
    print(f"{'stream':<30} {'bytes':>10} {'per delta':>11} {'held':>11} {'ratio':>6}")
    for name, method, text, size in cases:
        pieces = _pieces(text, size)
        base = best_of(functools.partial(_each, pieces), args.repeat)
        held = best_of(functools.partial(_held, method, pieces), args.repeat)
        print(
            f"{name:<30} {len(text.encode()):>10} {base * 1000:>9.1f}ms {held * 1000:>9.1f}ms"
            f" {held / base:>6.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
