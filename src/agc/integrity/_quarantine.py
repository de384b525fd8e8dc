"""The quarantine file of a recovered artifact, judged against its manifest entry (pure).

``agc recover`` moves a torn last line into ``<file>.quarantine[-N]`` beside the file
and records its name, length and digest in the manifest (``quarantine`` of the
artifact's entry). Whatever store holds the run, the file must still be there with
exactly those bytes; how it is read (a folder, an object store) is the caller's.
"""

from __future__ import annotations

from typing import Any

from agc._core.digest import digests_equal
from agc._core.report import Finding
from agc.integrity._manifest import ArtifactSeal

__all__ = ["judge_quarantine", "quarantine_name"]


def quarantine_name(seal: ArtifactSeal) -> str:
    """The quarantine file's name as the manifest entry ``seal`` records it."""
    return str((seal.quarantine or {}).get("file"))


def judge_quarantine(seal: ArtifactSeal, observed: tuple[str, int] | None) -> list[Finding[Any]]:
    """The findings on the quarantine file of ``seal`` (an entry with a ``quarantine``).

    Args:
        seal: the artifact's manifest entry.
        observed: the file's ``(hex digest in seal.algorithm, length in bytes)``;
            ``None`` when it is absent.

    Returns:
        ``[]`` when it holds exactly the recorded bytes; else one ``deleted`` (absent)
        or ``modified`` (another digest or length) finding about the artifact.
    """
    kind, quarantine = seal.kind, seal.quarantine or {}
    name = quarantine_name(seal)
    expected = {"digest": quarantine.get("digest"), "bytes": quarantine.get("bytes")}
    if observed is None:
        return [
            Finding(
                "deleted",
                f"{kind} quarantine file {name} missing (deleted after recovery)",
                artifact=kind,
                expected=expected,
            )
        ]
    digest, size = observed
    if size == quarantine.get("bytes") and digests_equal(str(quarantine.get("digest")), digest):
        return []
    return [
        Finding(
            "modified",
            f"{kind} quarantine file {name} checksum mismatch",
            artifact=kind,
            expected=expected,
            actual={"digest": digest, "bytes": size},
        )
    ]
