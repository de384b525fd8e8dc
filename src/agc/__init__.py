"""agc: auditable, resumable AI-agent runs.

Integrity (sealed append-only transcripts and a verifier) lives in :mod:`agc.integrity`;
resume (secret-free snapshots and history repair) in :mod:`agc.resume`; the command line
in :mod:`agc.cli`, the only package that imports typer and rich.

``AgcError`` and ``ExitCode`` are loaded on first access (PEP 562): every console script
imports this package first, and ``agc --help`` needs neither (nor :mod:`typing`, which
they import).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from agc.errors import AgcError
    from agc.exitcodes import ExitCode
del TYPE_CHECKING

__all__ = ["AgcError", "ExitCode", "__version__"]

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``AgcError`` or ``ExitCode``, imported on first access and then kept.

    Raises:
        AttributeError: any other name.
    """
    value: object
    if name == "AgcError":
        from agc import errors  # noqa: PLC0415 - on first access

        value = errors.AgcError
    elif name == "ExitCode":
        from agc import exitcodes  # noqa: PLC0415 - on first access

        value = exitcodes.ExitCode
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, the two loaded on first access included."""
    return sorted({*globals(), *__all__})
