"""Counts in words, as every human message of agc prints them."""

from __future__ import annotations

__all__ = ["counted"]


def counted(count: int, noun: str, plural: str | None = None, *, grouped: bool = False) -> str:
    """``count`` and ``noun`` in English agreement: ``"1 record"``, ``"0 records"``,
    ``"2 records"`` (the singular for exactly one, as English writes it).

    Args:
        count: how many.
        noun: the singular noun (``record``, ``byte``, ``tool event``).
        plural: the plural when it is not ``noun + "s"``.
        grouped: the count with thousands separators (``1,204 records``).
    """
    number = f"{count:,}" if grouped else str(count)
    word = noun if count == 1 else (plural if plural is not None else f"{noun}s")
    return f"{number} {word}"
