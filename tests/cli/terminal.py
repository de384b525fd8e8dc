"""A command run in a child process with one of its streams on a pseudo-terminal."""

from __future__ import annotations

import os
import select
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

_SCRIPT = "import sys; from agc.cli.{module} import main; sys.exit(main(sys.argv[1:]))"


def on_a_terminal(
    module: str,
    argv: list[str],
    *,
    stream: Literal["stdout", "stderr"],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = 60,
) -> tuple[int, str, str]:
    """Run ``agc.cli.<module>.main(argv)`` in a child whose ``stream`` is a
    pseudo-terminal (``COLUMNS=120`` and ``TERM=xterm`` unless ``env`` says otherwise;
    ``env`` is added to this process's environment).

    Returns:
        ``(exit code, the child's stdout when the terminal is its stderr, else "", what
        it drew on the terminal)``; the other stream of a child whose stdout is the
        terminal is discarded.
    """
    import pty  # noqa: PLC0415 - POSIX only, as the terminal it opens

    leader, follower = pty.openpty()
    on_stdout = stream == "stdout"
    child = subprocess.Popen(
        [sys.executable, "-c", _SCRIPT.format(module=module), *argv],
        stdout=follower if on_stdout else subprocess.PIPE,
        stderr=subprocess.DEVNULL if on_stdout else follower,
        cwd=cwd,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm", **(env or {})},
    )
    os.close(follower)
    drawn = []
    while True:
        ready, _, _ = select.select([leader], [], [], timeout)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        drawn.append(chunk)
    out = "" if child.stdout is None else child.stdout.read().decode()
    code = child.wait(timeout=timeout)
    os.close(leader)
    return code, out, b"".join(drawn).decode(errors="replace")
