"""Verdicts a person reads: the word and the category of every finding code.

A failing run is named by what is wrong with it, not by one word for every failure.
:data:`VERDICTS` is the one table that maps each finding code of a run or store report
to its category, in order of severity (most severe first):

- ``tampered`` (red): the sealed evidence was changed, removed or replaced, or what
  vouches for it (a sidecar, the manifest, a signature, the chain) is damaged;
- ``unverified`` (orange): nothing is seen to have changed, but the evidence cannot be
  vouched for under the rules given: no accepted signature, a retention shorter than
  asked, or no such run in the store;
- ``unfinished`` (yellow): the evidence was never sealed for good: a crash, a run
  still being written, a recovery, an empty transcript;
- ``ok`` (green): a complete run (its verdict word is ``complete``).

A run's verdict (:func:`verdict_of`) is its most severe error finding: the one whose
code comes first in the table (a code the table does not know counts as the most
severe, so a verdict is never understated); the verdict word is that code. A run with
no error finding is ``complete`` whatever its warnings. Every renderer (``agc-verify``
text, ``agc report`` HTML and CSV, the ``--json`` reports) uses these words and
categories.

Light on purpose: ``agc-verify`` imports it on its fast path.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Final, Literal

from agc._core.record import FrozenRecord, record

if TYPE_CHECKING:
    from agc._core.report import Finding

__all__ = [
    "CATEGORIES",
    "COMPLETE",
    "VERDICTS",
    "Verdict",
    "VerdictCategory",
    "category_of",
    "count_verdicts",
    "finding_lines",
    "finding_text",
    "most_severe",
    "verdict_of",
]

VerdictCategory = Literal["tampered", "unverified", "unfinished", "ok"]
"""How bad a verdict is, most severe first (see the module text)."""

CATEGORIES: Final[Mapping[VerdictCategory, str]] = MappingProxyType(
    {
        "tampered": "changed, removed or replaced after sealing",
        "unverified": "cannot be vouched for: no accepted signature, retention, or no such run",
        "unfinished": "never sealed for good: a crash, still being written, or recovered",
        "ok": "complete and untouched",
    }
)
"""Each category and what it means to a reader, most severe first."""

COMPLETE: Final = "complete"
"""The verdict word of a run without an error finding."""

VERDICTS: Final[Mapping[str, VerdictCategory]] = MappingProxyType(
    {
        # tampered: the evidence itself changed or is gone
        "replaced": "tampered",
        "deleted": "tampered",
        "run-deleted": "tampered",
        "manifest-replaced": "tampered",
        "modified": "tampered",
        "truncated": "tampered",
        "extended": "tampered",
        "version-newer": "tampered",
        "delete-marker": "tampered",
        # tampered: what vouches for the evidence is damaged or forged
        "bad-signature": "tampered",
        "manifest-invalid": "tampered",
        "manifest-missing": "tampered",
        "sidecar-invalid": "tampered",
        "sidecar-missing": "tampered",
        "not-regular-file": "tampered",
        "unexpected": "tampered",
        "chain-broken": "tampered",
        "chain-invalid": "tampered",
        "head-not-in-chain": "tampered",
        "head-mismatch": "tampered",
        "unchained": "tampered",
        "transcript-diverges": "tampered",
        # unverified: intact as far as can be seen, not vouched for under the rules
        "run-missing": "unverified",
        "unknown-key": "unverified",
        "unsigned": "unverified",
        "retention-missing": "unverified",
        "retention-short": "unverified",
        "object-lock-off": "unverified",
        "legacy-format": "unverified",
        "unverified-records": "unverified",
        "signature-not-verified": "unverified",
        # unfinished: never sealed for good
        "recovered": "unfinished",
        "capture-failed": "unfinished",
        "hooks-stopped": "unfinished",
        "unsealed": "unfinished",
        "torn-tail": "unfinished",
        "missing": "unfinished",
        "empty": "unfinished",
        "link-pending": "unfinished",
        "temp-file": "unfinished",
    }
)
"""Finding code -> category, most severe first; the order ranks a run's findings."""

_RANK: Final = {code: rank for rank, code in enumerate(VERDICTS)}


@record
class Verdict(FrozenRecord):
    """A run's verdict: ``word`` (``complete`` or the deciding finding code) and its
    ``category`` (``tampered``, ``unverified``, ``unfinished``, ``ok``)."""

    word: str
    category: VerdictCategory

    @property
    def ok(self) -> bool:
        """True for a complete run."""
        return self.category == "ok"


def category_of(code: str) -> VerdictCategory:
    """The category of a finding code; an unknown code is ``tampered`` (never understated)."""
    return VERDICTS.get(code, "tampered")


def _rank(code: str) -> tuple[int, str]:
    return _RANK.get(code, -1), code


def verdict_of(findings: Iterable[Finding[Any]]) -> Verdict:
    """The verdict of a run (or artifact) with these findings: the most severe error
    finding's code (table order, then the code, so the choice is stable), or
    ``complete`` when no finding is an error."""
    codes = [f.code for f in findings if f.severity == "error"]
    if not codes:
        return Verdict(COMPLETE, "ok")
    code = min(codes, key=_rank)
    return Verdict(code, category_of(code))


def count_verdicts(verdicts: Iterable[Verdict]) -> dict[Verdict, int]:
    """Runs per verdict, most severe first, ``complete`` last (absent verdicts omitted)."""
    counts: dict[Verdict, int] = {}
    for verdict in verdicts:
        counts[verdict] = counts.get(verdict, 0) + 1
    order = sorted(counts, key=lambda v: (v.ok, _rank(v.word)))
    return {verdict: counts[verdict] for verdict in order}


def most_severe(categories: Iterable[VerdictCategory]) -> VerdictCategory:
    """The most severe of some categories (``ok`` for none): the colour of a verdict
    made of several, such as a store's."""
    order = list(CATEGORIES)
    return min(categories, key=order.index, default="ok")


def finding_lines(finding: Finding[Any]) -> tuple[int, int] | None:
    """``(first, last)``: the 1-based range of lines a finding locates (as ``sed -n``
    counts them), or ``None`` when it locates none."""
    return finding.lines


def finding_text(finding: Finding[Any], *, code: bool = True) -> str:
    """``modified: transcript checksum mismatch (lines 2001-3000)``: the code (unless
    ``code`` is false), the message and the located lines, if any."""
    text = f"{finding.code}: {finding.message}" if code else finding.message
    lines = finding_lines(finding)
    if lines is not None:
        first, last = lines
        text += f" (line {first})" if first == last else f" (lines {first}-{last})"
    return text
