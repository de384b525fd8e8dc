"""Findings only object storage can show: object versions, delete markers, Object Lock.

Pure: each function turns what S3 listed or answered about one key into findings.

=====================  ===================================================================
``version-newer``      the key holds more than one version: it was written again after
                       agc created it (write-once storage rewritten; the earliest
                       version is the one agc wrote, the current one is what readers get)
``delete-marker``      the key's current version is a delete marker: the object reads as
                       deleted, and its earlier version is still kept (S3 versioning)
``retention-missing``  a retention policy applies and the object has no Object Lock
                       retention and no legal hold (it can be deleted)
``retention-short``    its retention ends before the policy's (fewer days after the
                       object was written), or is GOVERNANCE where COMPLIANCE is asked
``object-lock-off``    the bucket has no Object Lock: anyone allowed to delete objects
                       can remove evidence for good (an error when a retention policy is
                       asked for, else a warning)
=====================  ===================================================================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Literal

from agc._core.report import Finding

if TYPE_CHECKING:  # the run verifier imports this module for a folder store too
    from agc._core.objstore import ObjectInfo, ObjectVersion, Retention

__all__ = ["ObjectStoreFindingCode", "judge_object", "object_lock_finding"]

ObjectStoreFindingCode = Literal[
    "version-newer", "delete-marker", "retention-missing", "retention-short", "object-lock-off"
]
"""The finding codes of object storage (run and store reports)."""

_DAY_MS: Final = 86_400_000
# The retain-until date is computed from the writer's clock, the object's date from the
# service's: an hour of skew between them is not a shorter retention.
_SKEW_MS: Final = 3_600_000


def judge_object(
    label: str,
    artifact: str,
    versions: Sequence[ObjectVersion],
    info: ObjectInfo | None,
    policy: Retention | None,
) -> list[Finding[ObjectStoreFindingCode]]:
    """Findings about one key.

    Args:
        label: what the key is, for messages (``transcript``, ``manifest``, ``chain link 7``).
        artifact: the finding's ``artifact`` (``transcript``, ``manifest``, ``store`` …).
        versions: the key's versions and delete markers as listed (any order).
        info: what reading the current version answered (``None``: not read, or absent).
        policy: the retention every object must have, if any.
    """
    findings: list[Finding[ObjectStoreFindingCode]] = []
    kept = [v for v in versions if not v.is_delete_marker]
    latest = next((v for v in versions if v.is_latest), None)
    if latest is not None and latest.is_delete_marker:
        earliest = min(kept, key=lambda v: v.last_modified_ms, default=None)
        findings.append(
            Finding(
                "delete-marker",
                f"{label} was deleted: a delete marker hides it"
                + (
                    f"; its version {earliest.version_id} is still kept (remove the marker "
                    "to restore it)"
                    if earliest is not None
                    else ""
                ),
                artifact=artifact,
                expected={"version_id": earliest.version_id if earliest else None},
                actual={"delete_marker": latest.version_id},
            )
        )
    if len(kept) > 1:
        ordered = sorted(kept, key=lambda v: v.last_modified_ms)
        current = next((v for v in kept if v.is_latest), ordered[-1])
        findings.append(
            Finding(
                "version-newer",
                f"{label} was written again after it was sealed: {len(kept) - 1} newer "
                f"version(s) over the sealed one ({ordered[0].version_id})",
                artifact=artifact,
                expected={"version_id": ordered[0].version_id},
                actual={"version_id": current.version_id, "versions": len(kept)},
            )
        )
    if policy is not None and info is not None:
        findings.extend(_judge_retention(label, artifact, info, policy))
    return findings


def _judge_retention(
    label: str, artifact: str, info: ObjectInfo, policy: Retention
) -> list[Finding[ObjectStoreFindingCode]]:
    expected = {"mode": policy.mode, "days": policy.days}
    if info.legal_hold:
        return []  # held until someone with s3:PutObjectLegalHold lifts it
    if info.lock_mode is None or info.retain_until_ms is None:
        return [
            Finding(
                "retention-missing",
                f"{label} has no Object Lock retention (policy: {policy.mode} for "
                f"{policy.days} days)",
                artifact=artifact,
                expected=expected,
                actual={"mode": None, "retain_until_ms": None},
            )
        ]
    retained_ms = info.retain_until_ms - info.last_modified_ms
    weaker = policy.mode == "COMPLIANCE" and info.lock_mode != "COMPLIANCE"
    if retained_ms + _SKEW_MS < policy.days * _DAY_MS or weaker:
        days = max(retained_ms, 0) / _DAY_MS
        return [
            Finding(
                "retention-short",
                f"{label} is retained {info.lock_mode} for {days:.1f} days; the policy is "
                f"{policy.mode} for {policy.days} days",
                artifact=artifact,
                expected=expected,
                actual={"mode": info.lock_mode, "retain_until_ms": info.retain_until_ms},
            )
        ]
    return []


def object_lock_finding(bucket: str, *, policy_asked: bool) -> Finding[ObjectStoreFindingCode]:
    """The bucket has no Object Lock (an error when a retention policy was asked for)."""
    return Finding(
        "object-lock-off",
        f"bucket {bucket} has no Object Lock: its objects can be deleted or overwritten "
        "for good by anyone allowed to",
        "error" if policy_asked else "warning",
        artifact="store",
    )
