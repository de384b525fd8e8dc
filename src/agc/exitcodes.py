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


EXIT_CODE_TABLE: tuple[tuple[ExitCode, str], ...] = (
    (ExitCode.OK, "success; for verify: the run is complete"),
    (ExitCode.FINDINGS, "findings: evidence incomplete or tampered, history invalid"),
    (ExitCode.USAGE, "usage error: bad option, run id or input"),
    (ExitCode.UNREADABLE, "store or file unreadable/unwritable (permissions, disk, lock)"),
    (ExitCode.INTERNAL, "internal error in agc (a bug, not a verdict)"),
)


def exit_code_help() -> str:
    """Return the exit-code table as plain text lines, for ``--help`` epilogs."""
    lines = ["Exit codes:"]
    lines.extend(f"  {int(code)}  {text}" for code, text in EXIT_CODE_TABLE)
    return "\n".join(lines)
