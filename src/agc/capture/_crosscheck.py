"""The two witnesses of a session compared: what the hooks saw fire, and what the client's
session file says was called.

A client writes its session file itself, and anyone who can write the user's home can
edit it before agc seals it. The hooks see each tool call as it happens, in a separate
process, and their records are appended (and checkpointed) at once. So a call the hooks
saw that the sealed session file lacks, or a call in the session file that the hooks never
saw while they were active, is the sign of a session file changed before its seal.

Matching is by the client's call id where the hook record carries one (Claude Code's
``tool_use_id``, the Codex ``call_id``): such a call is the file's call of that id or
missing from it. Hook calls without an id (the Gemini CLI's hooks carry none) are
aligned with the file's remaining calls in order by tool name
(a longest common subsequence, as :class:`difflib.SequenceMatcher` finds it), each file
call matched at most once.

The hooks were *active* over the part of the session file between the first and the last
call they matched, widened to the file's start when they saw the session start and to its
end when they saw it stop or end: calls outside that window (a session begun before the
hooks were installed) are not counted against the file.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from agc.capture._events import ToolEvent

__all__ = ["Divergence", "compare_calls"]

_OPENS: Final = frozenset({"session-start"})
_CLOSES: Final = frozenset({"stop", "session-end"})


@dataclass(frozen=True)
class Divergence:
    """One tool call only one witness has.

    Attributes:
        kind: ``missing-from-transcript`` (the hooks saw it, the session file lacks it)
            or ``unseen-by-hooks`` (the session file has it, the active hooks never saw it).
        tool: the tool's name; ``call_id``: the call's id when known.
        line: for ``unseen-by-hooks``, the 1-based line of the session file.
        index: the call's 0-based position among its witness's calls.
        refused: for ``unseen-by-hooks``, the session file answers the call with an
            error: a call the client can refuse before any hook runs (Claude Code blocks
            a bare ``sleep`` so), which never ran, so its absence from the hooks says
            less than a call that ran.
    """

    kind: Literal["missing-from-transcript", "unseen-by-hooks"]
    tool: str | None
    call_id: str | None
    line: int | None
    index: int
    refused: bool = False

    def describe(self) -> str:
        """One line for a person: which call, which witness lacks it, where."""
        call = f"{self.tool or 'a tool'} call" + (f" {self.call_id}" if self.call_id else "")
        if self.kind == "missing-from-transcript":
            return f"the hooks saw the {call} (hook call {self.index + 1}); the transcript lacks it"
        where = f" at line {self.line}" if self.line is not None else ""
        said = f"the transcript holds the {call}{where}; the hooks never saw it"
        return said + (
            " (its result is an error: refused before the hooks ran?)" if self.refused else ""
        )


def compare_calls(
    hooked: Sequence[ToolEvent], recorded: Sequence[ToolEvent]
) -> tuple[Divergence, ...]:
    """The calls only one witness has: hook calls first, in hook order, then file calls in
    file order; empty when the two agree.

    Args:
        hooked: the session's hook records, in the order they were appended.
        recorded: the records read from the client's session file, in file order.
    """
    hook_calls = [event for event in hooked if event.event == "call"]
    file_calls = [event for event in recorded if event.event == "call"]
    by_id: dict[str, int] = {}
    for index, call in enumerate(file_calls):
        if call.call_id:
            by_id.setdefault(call.call_id, index)
    taken: set[int] = set()
    loose: list[int] = []  # hook calls without an id, in order
    unmatched_ids: list[int] = []  # hook calls whose id the file lacks
    for index, call in enumerate(hook_calls):
        if not call.call_id:
            loose.append(index)
            continue
        at = by_id.get(call.call_id)
        if at is None or at in taken:
            # A client that names its calls names them in both witnesses: a call id
            # the file lacks is a missing call, never matched by its tool's name
            # (another call of the same tool, its id forged, would take its place).
            unmatched_ids.append(index)
        else:
            taken.add(at)
    free = [i for i in range(len(file_calls)) if i not in taken]
    # The rest aligned in order by tool name: a longest common subsequence.
    aligned: set[int] = set()
    pairs = _common(
        [hook_calls[i].tool or "" for i in loose], [file_calls[i].tool or "" for i in free]
    )
    for a, b in pairs:
        aligned.add(loose[a])
        taken.add(free[b])
    unmatched = (set(loose) - aligned) | set(unmatched_ids)
    missing = [
        Divergence("missing-from-transcript", call.tool, call.call_id, None, index)
        for index, call in enumerate(hook_calls)
        if index in unmatched
    ]
    start, end = _active(hooked, taken, len(file_calls))
    failed = {
        event.call_id
        for event in recorded
        if event.event == "result" and event.status == "error" and event.call_id
    }
    unseen = [
        Divergence(
            "unseen-by-hooks",
            call.tool,
            call.call_id,
            call.line,
            index,
            refused=call.call_id is not None and call.call_id in failed,
        )
        for index, call in enumerate(file_calls)
        if start <= index < end and index not in taken
    ]
    return (*missing, *unseen)


def _active(hooked: Sequence[ToolEvent], taken: set[int], calls: int) -> tuple[int, int]:
    """The file calls ``[start, end)`` the hooks were active over (see the module doc)."""
    kinds = [event.event for event in hooked]
    opened = any(kind in _OPENS for kind in kinds)
    last_call = max((i for i, kind in enumerate(kinds) if kind == "call"), default=-1)
    closed = any(kind in _CLOSES for kind in kinds[last_call + 1 :])
    start = 0 if opened else min(taken, default=calls)
    end = calls if closed else max(taken, default=-1) + 1
    return start, max(start, end)


_MAX_EDITS: Final = 2_000


def _common(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int]]:
    """Index pairs of a longest common subsequence of ``a`` and ``b``, in order.

    Myers' O((N+M)·D) difference algorithm ("An O(ND) Difference Algorithm and Its
    Variations", Algorithmica 1986), fast when the two differ in few places, which is
    the case to be exact about; beyond :data:`_MAX_EDITS` differences the sequences
    disagree wholesale and :class:`difflib.SequenceMatcher`'s common blocks are used.
    """
    n, m = len(a), len(b)
    offset = n + m + 1
    v = [0] * (2 * offset + 1)
    trace: list[list[int]] = []
    for d in range(min(n + m, _MAX_EDITS) + 1):
        trace.append(v[offset - d - 1 : offset + d + 2])
        for k in range(-d, d + 1, 2):
            if _from_above(k, d, v[offset + k - 1], v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            v[offset + k] = x
            if x >= n and y >= m:
                return _walk_back(trace, n, m)
    matcher = difflib.SequenceMatcher(None, list(a), list(b), autojunk=False)
    return [
        (block.a + i, block.b + i)
        for block in matcher.get_matching_blocks()
        for i in range(block.size)
    ]


def _walk_back(trace: list[list[int]], n: int, m: int) -> list[tuple[int, int]]:
    """The diagonal moves (equal elements) of the shortest edit path ``trace`` ends in."""
    pairs: list[tuple[int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, -1, -1):
        saved = trace[d]  # v before step d, for k in [-d-1, d+1]

        def at(k: int, saved: list[int] = saved, d: int = d) -> int:
            return saved[k + d + 1]

        k = x - y
        prev_k = k + 1 if _from_above(k, d, at(k - 1), at(k + 1)) else k - 1
        prev_x = at(prev_k)
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x, y = x - 1, y - 1
            pairs.append((x, y))
        x, y = prev_x, prev_y
    pairs.reverse()
    return pairs


def _from_above(k: int, d: int, left: int, right: int) -> bool:
    """Whether the furthest path on diagonal ``k`` after ``d`` edits comes from diagonal
    ``k + 1`` (an insertion) rather than ``k - 1`` (a deletion), given how far those got."""
    return k == -d or (k != d and left < right)
