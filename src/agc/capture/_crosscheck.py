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
end when they saw it stop or end: calls before that window (a session begun before the
hooks were installed) are not counted against the file. Calls after it, when the hooks saw
neither a stop nor the session's end after their last call, are calls the hooks were not
seen to stop before (``after-hooks``): a session killed mid-turn whose file was imported
later, or hooks that stopped firing; the hooks vouch for none of them.

The hook records need not be in the order the calls happened: a client that runs the
per-tool-call hooks in the background (Claude Code's and Codex's ``async`` hooks) lets a
call's result come before its call, two calls interleave, and a call's record come after
the stop that ended its turn. Nothing here depends on their order but that last case,
which :func:`_in_turn_calls` recognises.

A call both witnesses have by its id is compared by what the two give alike of its input
(:func:`stable_input`): a call the hooks saw run with another input than the session
file says is ``input-differs``.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

from agc._core.canonical import canonical_json
from agc._core.redact import redact_value
from agc.capture._events import ClientName, ToolEvent

__all__ = ["Divergence", "compare_calls", "input_digest", "stable_input"]

_OPENS: Final = frozenset({"session-start"})
_CLOSES: Final = frozenset({"stop", "session-end"})


@dataclass(frozen=True)
class Divergence:
    """One tool call only one witness has.

    Attributes:
        kind: ``missing-from-transcript`` (the hooks saw it, the session file lacks it),
            ``unseen-by-hooks`` (the session file has it, the active hooks never saw
            it), ``after-hooks`` (the session file has it after the hooks' last call,
            and the hooks saw no stop or end after that) or ``input-differs`` (both have
            the call by its id, with inputs that differ in what both give alike).
        tool: the tool's name; ``call_id``: the call's id when known.
        line: for a call the session file has, its 1-based line there.
        index: the call's 0-based position among its witness's calls (the session
            file's, but for ``missing-from-transcript``).
        refused: for ``unseen-by-hooks`` and ``after-hooks``, the session file answers
            the call with an error: a call the client can refuse before any hook runs
            (Claude Code blocks a bare ``sleep`` so), which never ran, so its absence
            from the hooks says less than a call that ran.
    """

    kind: Literal["missing-from-transcript", "unseen-by-hooks", "after-hooks", "input-differs"]
    tool: str | None
    call_id: str | None
    line: int | None
    index: int
    refused: bool = False

    def describe(self) -> str:
        """One line for a person: which call and which witness lacks it. Its line in the
        session file (``line``) is not in it: a finding carries it as its location, said
        once where the finding is shown."""
        call = f"{self.tool or 'a tool'} call" + (
            f" with id {self.call_id}" if self.call_id else ""
        )
        if self.kind == "missing-from-transcript":
            return f"the hooks saw the {call} (hook call {self.index + 1}); the transcript lacks it"
        if self.kind == "input-differs":
            return f"the hooks saw the {call} run with another input than the transcript holds"
        said = f"the transcript holds the {call}; the hooks never saw it"
        if self.kind == "after-hooks":
            said += (
                ": it comes after the hooks' last call, and the hooks saw no stop or "
                "session end after that (a session killed mid-turn, or hooks that "
                "stopped firing)"
            )
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
    by_id: dict[str, list[int]] = {}
    for index, call in enumerate(file_calls):
        if call.call_id:
            by_id.setdefault(call.call_id, []).append(index)
    taken: set[int] = set()
    first_seen: dict[str, int] = {}  # call id -> the first hook call with it
    loose: list[int] = []  # hook calls without an id, in order
    unmatched_ids: list[int] = []  # hook calls whose id the file lacks
    rewritten: list[int] = []  # file calls whose input differs from the hook call's
    for index, call in enumerate(hook_calls):
        if not call.call_id:
            loose.append(index)
            continue
        at = next((i for i in by_id.get(call.call_id, ()) if i not in taken), None)
        first = first_seen.setdefault(call.call_id, index)
        if at is None and first != index and _same_call(call, hook_calls[first]):
            # The same event captured twice (a hook that retried what the resident
            # capture process also stored late): one call, seen twice.
            continue
        if at is None:
            # A client that names its calls names them in both witnesses: a call id
            # the file lacks is a missing call, never matched by its tool's name
            # (another call of the same tool, its id forged, would take its place).
            unmatched_ids.append(index)
        else:
            taken.add(at)
            if not _same_input(call, file_calls[at]):
                rewritten.append(at)
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
    # A call the client refused before its hooks ran has an error result and no other:
    # one answered once in error and once not is a call that ran.
    answered = {
        event.call_id
        for event in recorded
        if event.event == "result" and event.status != "error" and event.call_id
    }
    failed = {
        event.call_id
        for event in recorded
        if event.event == "result" and event.status == "error" and event.call_id
    } - answered
    unseen = [
        Divergence(
            "unseen-by-hooks" if index < end else "after-hooks",
            call.tool,
            call.call_id,
            call.line,
            index,
            refused=call.call_id is not None and call.call_id in failed,
        )
        for index, call in enumerate(file_calls)
        if start <= index and index not in taken
    ]
    differs = [
        Divergence(
            "input-differs", file_calls[at].tool, file_calls[at].call_id, file_calls[at].line, at
        )
        for at in sorted(rewritten)
    ]
    return (*missing, *unseen, *differs)


def _active(hooked: Sequence[ToolEvent], taken: set[int], calls: int) -> tuple[int, int]:
    """The file calls ``[start, end)`` the hooks were active over (see the module doc);
    ``start`` is ``calls`` when they were active over none (they saw no session start
    and matched no call)."""
    kinds = [event.event for event in hooked]
    opened = any(kind in _OPENS for kind in kinds)
    last_call = max((i for i in _in_turn_calls(kinds)), default=-1)
    closed = any(kind in _CLOSES for kind in kinds[last_call + 1 :])
    start = 0 if opened else min(taken, default=calls)
    end = calls if closed else max(taken, default=-1) + 1
    return start, max(start, end)


_TOOL: Final = frozenset({"call", "result"})


def _in_turn_calls(kinds: Sequence[str]) -> list[int]:
    """The positions of the call records that were appended in their own turn.

    A client runs the per-tool-call hooks in the background when told so (Claude Code's
    and Codex's ``async`` hooks) and does not wait for them, while the hooks of a turn's
    end (stop, session end) are waited for: a call's record may then be appended after
    the stop that followed the call. A call or result record that comes after a stop or
    session end with only other call or result records in between is such a late
    record of the turn before: it does not reopen the turn (a new turn begins with an
    event the client waits for: a session start or a prompt)."""
    found = []
    late = False
    for index, kind in enumerate(kinds):
        if kind in _CLOSES:
            late = True
        elif kind not in _TOOL:
            late = False
        elif kind == "call" and not late:
            found.append(index)
    return found


def stable_input(client: ClientName, value: Any) -> Any:
    """What of a tool call's input a client's hook event and its session file give
    alike (``None``: nothing to compare), as recorded from the real clients
    (``tests/fixtures/hooks/<client>/``):

    * Claude Code hands its hooks the ``tool_use`` block's ``input`` as the session file
      holds it: the whole input (members in any order);
    * the Codex CLI names a shell call ``Bash`` with ``{"command": text}`` in its hook
      and keeps the model's own call in the rollout (``exec_command`` with ``cmd``,
      ``shell_command`` with ``command``, plus the model's other arguments): the command
      text (``cmd`` when the call has one, else ``command``), when both give one as a
      string;
    * the Gemini CLI's hooks give no call id, so no call is matched by id: nothing.
    """
    if client == "claude-code":
        return value
    if client == "codex" and isinstance(value, Mapping):
        # ``cmd`` first: it is what ``exec_command`` runs, whatever else its call holds.
        command = value.get("cmd", value.get("command"))
        return {"command": command} if isinstance(command, str) else None
    return None


def input_digest(client: ClientName, value: Any) -> str | None:
    """SHA-256 (hex) of the RFC 8785 canonical JSON of :func:`stable_input` of a call's
    input, redacted by the one secret detector (the hooks' record is redacted when it
    is written, the session file's call is compared as it would be recorded); ``None``
    when there is nothing to compare."""
    stable = stable_input(client, value)
    if stable is None:
        return None
    try:
        text = canonical_json(redact_value(stable))
    except (TypeError, ValueError):  # no canonical form (a value JSON cannot hold)
        return None
    return hashlib.sha256(text).hexdigest()


def _same_input(hooked: ToolEvent, recorded: ToolEvent) -> bool:
    """Whether a call both witnesses have gives the same input (compared with
    :func:`hmac.compare_digest`), or gives nothing to compare on either side."""
    ours = input_digest(hooked.client, hooked.input)
    theirs = input_digest(recorded.client, recorded.input)
    if ours is None or theirs is None:
        return True
    return hmac.compare_digest(ours, theirs)


def _same_call(one: ToolEvent, other: ToolEvent) -> bool:
    """Whether two hook calls with one id are the same event (its tool and input)."""
    return one.tool == other.tool and _same_input(one, other)


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
