"""The last look at a record before it reaches a file: no field holds a host path.

Every record builder cleans its fields on the way in; this walks the finished record
once more, with the same rules ``agc ledger check`` applies, so that a field no
builder thought of (an id, a status, a name) cannot carry a host path either, and a
freshly written turn file never holds what ``check`` would report as ``host-path``.

Rules, by key: a path key (``path``, ``localPath``, ``movePath``, ``outputPath``) must
hold a clean project-relative path; each entry of ``localPaths`` too; ``command`` must
hold no host path read as a shell command; every other string must hold none read as
free text (see :meth:`agc.ledger._sanitize.PathSanitizer.holds_host_path`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

from agc.ledger._sanitize import PathSanitizer

__all__ = ["COMMAND_KEYS", "PATH_KEYS", "PATH_LIST_KEYS", "guard_record", "host_path_fields"]

PATH_KEYS: Final = frozenset({"path", "localPath", "movePath", "outputPath"})
PATH_LIST_KEYS: Final = frozenset({"localPaths"})
COMMAND_KEYS: Final = frozenset({"command"})


def _bad_path(value: object, sanitizer: PathSanitizer) -> bool:
    return isinstance(value, str) and sanitizer.clean(value).path != value


def _bad_value(key: str, value: object, sanitizer: PathSanitizer) -> bool:
    if key in PATH_KEYS:
        return _bad_path(value, sanitizer)
    if not isinstance(value, str):
        return False
    return sanitizer.holds_host_path(value, command=key in COMMAND_KEYS)


def host_path_fields(record: Mapping[str, Any], sanitizer: PathSanitizer) -> list[str]:
    """Dotted names (``arguments.path``, ``actions[0].path``) of the fields of
    ``record`` that hold a host path, in record order."""
    return list(_walk(record, "", sanitizer))


def _walk(value: object, where: str, sanitizer: PathSanitizer) -> Iterator[str]:
    if isinstance(value, Mapping):
        for key, inner in value.items():
            name = f"{where}.{key}" if where else str(key)
            if key in PATH_LIST_KEYS and isinstance(inner, list):
                for index, entry in enumerate(inner):
                    if not isinstance(entry, str) or _bad_path(entry, sanitizer):
                        yield f"{name}[{index}]"
            elif isinstance(inner, Mapping | list):
                yield from _walk(inner, name, sanitizer)
            elif _bad_value(str(key), inner, sanitizer):
                yield name
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            name = f"{where}[{index}]"
            if isinstance(inner, Mapping | list):
                yield from _walk(inner, name, sanitizer)
            elif isinstance(inner, str) and sanitizer.holds_host_path(inner):
                yield name


def guard_record(record: Mapping[str, Any], sanitizer: PathSanitizer) -> dict[str, Any]:
    """A copy of ``record`` in which no field holds a host path.

    A path that is not clean becomes ``null`` with ``<key>Rejected: true``; a list of
    paths loses its bad entries (counted in ``<key>Rejected``); a command is dropped
    with ``commandRedacted: true``; other text is cleaned as free text
    (``<key>Redacted: true``) and dropped if that is not enough; a bad string in a list
    is removed. A record with nothing to change is returned as an equal copy.
    """
    guarded = _guard(record, sanitizer)
    assert isinstance(guarded, dict)
    return guarded


def _guard(value: object, sanitizer: PathSanitizer) -> object:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            if key in PATH_LIST_KEYS and isinstance(inner, list):
                kept = [e for e in inner if isinstance(e, str) and not _bad_path(e, sanitizer)]
                out[key] = kept
                if len(kept) < len(inner):
                    out[f"{key}Rejected"] = out.get(f"{key}Rejected", 0) + len(inner) - len(kept)
            elif isinstance(inner, Mapping | list):
                out[key] = _guard(inner, sanitizer)
            elif not _bad_value(str(key), inner, sanitizer):
                out[key] = inner
            elif key in PATH_KEYS:
                out[key] = None
                out[f"{key}Rejected"] = True
            elif key in COMMAND_KEYS:
                out["commandRedacted"] = True
            else:
                cleaned = sanitizer.clean_text(inner, max_chars=len(str(inner)) or 1).text
                out[key] = cleaned
                out[f"{key}Redacted"] = True
        return out
    if isinstance(value, list):
        return [
            _guard(inner, sanitizer)
            for inner in value
            if not (isinstance(inner, str) and sanitizer.holds_host_path(inner))
        ]
    return value
