"""The one table of process exit codes used by every agc command.

Every command-line entry point (``agc``, ``agc-verify``) maps its outcome through this
module, and ``--help`` prints :data:`EXIT_CODE_TABLE`. The codes are a contract for CI
gates: they never change meaning once released.
"""

from __future__ import annotations

import enum

__all__ = ["EXIT_CODE_TABLE", "ExitCode", "exit_code_help"]


class ExitCode(enum.IntEnum):
    """Process exit codes shared by all agc commands."""

    OK = 0
    """Success: for ``verify``, the run's evidence is complete."""
    FINDINGS = 1
    """The command ran and found a problem: evidence incomplete, history invalid."""
    USAGE = 2
    """Bad invocation or bad input: unknown option, invalid run id, unreadable JSON."""
    UNREADABLE = 3
    """The store or a file could not be read or written (permissions, disk full, lock)."""
    INTERNAL = 4
    """An unexpected error inside agc: a bug, never a verification verdict."""
    INTERRUPTED = 130
    """Stopped by Ctrl-C (SIGINT, 128 + 2 as shells report it); a run being written is
    left unsealed, and ``agc recover`` seals what is on disk."""
    TERMINATED = 143
    """Stopped by SIGTERM (128 + 15); as :attr:`INTERRUPTED`."""


EXIT_CODE_TABLE: tuple[tuple[ExitCode, str], ...] = (
    (ExitCode.OK, "success; for verify: the run is complete"),
    (ExitCode.FINDINGS, "findings: evidence incomplete or tampered, history invalid"),
    (ExitCode.USAGE, "usage error: bad option, run id or input"),
    (ExitCode.UNREADABLE, "store or file unreadable/unwritable (permissions, disk, lock)"),
    (ExitCode.INTERNAL, "internal error in agc (a bug, not a verdict)"),
    (ExitCode.INTERRUPTED, "interrupted (Ctrl-C); a run being written stays unsealed"),
    (ExitCode.TERMINATED, "terminated (SIGTERM); as 130, `agc recover RUN` seals it"),
)


def exit_code_help() -> str:
    """Return the exit-code table as plain text lines, for ``--help`` epilogs."""
    lines = ["Exit codes:"]
    lines.extend(f"  {int(code):>3}  {text}" for code, text in EXIT_CODE_TABLE)
    return "\n".join(lines)
