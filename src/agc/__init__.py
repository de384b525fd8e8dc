"""agc: auditable, resumable AI-agent runs.

Integrity (sealed append-only transcripts and a verifier) lives in :mod:`agc.integrity`;
resume (secret-free snapshots and history repair) in :mod:`agc.resume`; the command line
in :mod:`agc.cli`, the only package that imports typer and rich.
"""

from __future__ import annotations

from agc.errors import AgcError
from agc.exitcodes import ExitCode

__all__ = ["AgcError", "ExitCode", "__version__"]

__version__ = "0.1.0"
