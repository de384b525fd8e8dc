"""Reading a small input file a user names (a prompt, a policy, an attachments list)."""

from __future__ import annotations

from pathlib import Path

from agc.errors import InputError

__all__ = ["read_limited"]


def read_limited(
    path: Path, *, what: str, max_bytes: int, too_large: type[InputError] = InputError
) -> bytes:
    """Return the bytes of ``path``, reading at most ``max_bytes + 1`` of them.

    Args:
        path: the file the user named.
        what: how messages name it ("prompt file", "policy" …).
        max_bytes: the largest accepted size in bytes.
        too_large: the error raised for a larger file.

    Raises:
        InputError: the file does not exist or cannot be read.
        too_large: it holds more than ``max_bytes`` bytes (never read whole).
    """
    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError as exc:
        raise InputError(f"{what} {path} does not exist") from exc
    except OSError as exc:
        raise InputError(f"{what} {path} cannot be read: {exc.strerror}") from exc
    if len(data) > max_bytes:
        raise too_large(f"{what} {path} is larger than {max_bytes} bytes")
    return data
