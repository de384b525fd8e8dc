"""``check_history``: every provider rule on tool calls that a history breaks.

The rules are the ones the providers enforce when a request is sent, reported with the
provider's own wording so a finding can be matched with the error a user saw:

=================================  ==========================================================
``tool-call-unanswered``           a call has no result where the provider looks for it
                                   (OpenAI Chat: the ``tool`` messages right after the
                                   assistant message; Anthropic: the next message;
                                   Responses: any later item)
``orphan-tool-result``             a result answers no call where the provider looks for it
``duplicate-tool-result``          a second result for one call
``duplicate-call-id``              two calls share an id (Chat: in one message; Anthropic and
                                   Responses: anywhere in the history)
``tool-result-not-first``          (Anthropic) text before a ``tool_result`` in a user message
``text-after-tool-use``            (Anthropic) text after a ``tool_use`` in an assistant
                                   message (resume case ``anthropic-text-after-tool-use``)
``reasoning-without-following``    (Responses) a ``reasoning`` item not followed by the
                                   output item it produced
``torn-tail``                      (session files) the last line was cut off by a crash:
                                   no final line break and not JSON; the record is lost
                                   (the finding says what it held, when that can be told)
``unrecorded-call``                (Gemini CLI session files; a warning) a model message
                                   recorded without any part: the client stopped in that
                                   turn, and a call it was running is not in the file
=================================  ==========================================================

``check_history`` returns a :class:`HistoryReport` and never raises on findings;
``verify_history`` raises :class:`~agc.errors.HistoryInvalidError`.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias, get_args

from agc._core.json import has_lone_surrogate
from agc._core.report import Finding, JsonItems, Report
from agc._core.spill import SpilledItems
from agc.errors import HistoryInvalidError
from agc.resume._formats.detect import get_spec
from agc.resume._formats.model import FormatName, History, Message, Settled
from agc.resume._gc import collector_paused

if TYPE_CHECKING:
    from agc.resume._snapshot import ToolCallState

__all__ = [
    "FINDING_CODES",
    "FindingTally",
    "HistoryFinding",
    "HistoryFindingCode",
    "HistoryReport",
    "check_history",
    "check_loaded",
    "check_messages",
    "pending_warnings",
    "torn_tail_finding",
    "verify_history",
]

HistoryFindingCode = Literal[
    "tool-call-unanswered",
    "orphan-tool-result",
    "duplicate-tool-result",
    "duplicate-call-id",
    "tool-result-not-first",
    "text-after-tool-use",
    "reasoning-without-following",
    "torn-tail",
    "unrecorded-call",
]
"""The codes of a history report (documented in ``docs/resume.md``)."""

FINDING_CODES: Final[tuple[HistoryFindingCode, ...]] = get_args(HistoryFindingCode)

_ASSISTANT_OUTPUT: Final = frozenset({"call", "text", "other"})


HistoryFinding: TypeAlias = Finding[HistoryFindingCode]
"""One broken rule: a :class:`~agc._core.report.Finding` whose ``message`` is the rule
in the provider's words, with ``message_index`` (index in the history's neutral view;
for JSON arrays the provider's ``messages.N``), ``record`` (index of the native record:
for session files, the 0-based line) and ``call_id`` (the call or result concerned)."""

_FINDING_KEYS: Final = ("code", "message_index", "record", "call_id")


@dataclass(frozen=True)
class HistoryReport(Report[HistoryFindingCode]):
    """Result of :func:`check_history`.

    Attributes:
        format: the format the history was checked as.
        messages: messages (or items) in the history's view.
        calls: tool calls in the history.
        results: tool results in the history.
        findings: every broken rule, in history order; with ``counts``, only the first
            ones (examples: see :class:`FindingTally`). A tuple, or for a report that
            keeps every finding of a long history a read-only
            :class:`~agc._core.spill.SpilledItems` (most of them in a temporary file,
            read back in order as they are iterated).
        counts: ``None`` when ``findings`` holds every finding; else how many findings
            of each code the history has, of which ``findings`` holds examples.
    """

    CODES = frozenset(FINDING_CODES)

    format: FormatName
    messages: int
    calls: int
    results: int
    findings: Sequence[HistoryFinding]
    counts: Mapping[str, int] | None = None

    @property
    def valid(self) -> bool:
        """True when no rule is broken (the provider would accept the history)."""
        return not any(finding.is_error for finding in self.findings)

    def codes(self) -> frozenset[str]:
        """The codes of every finding (from the counts, when they are known)."""
        if self.counts is not None or (
            isinstance(self.findings, KeptFindings) and self.findings.counts is not None
        ):
            return frozenset(code for code, count in self.code_counts().items() if count)
        return super().codes()

    @property
    def total(self) -> int:
        """How many findings the history has (``findings`` may hold only examples)."""
        return len(self.findings) if self.counts is None else sum(self.counts.values())

    def code_counts(self) -> dict[str, int]:
        """How many findings of each code the history has."""
        if self.counts is not None:
            return dict(self.counts)
        if isinstance(self.findings, KeptFindings) and self.findings.counts is not None:
            return dict(self.findings.counts)
        counts: dict[str, int] = {}
        for finding in self.findings:
            counts[finding.code] = counts.get(finding.code, 0) + 1
        return counts

    def _members(self) -> dict[str, Any]:
        findings = self.findings
        return {
            "format": self.format,
            "valid": self.valid,
            "messages": self.messages,
            "calls": self.calls,
            "results": self.results,
            "findings": JsonItems(
                findings,
                self._finding_dict,
                escapes=findings.marked if isinstance(findings, SpilledItems) else None,
            ),
        }

    def _finding_dict(self, finding: HistoryFinding) -> dict[str, Any]:
        """The finding as JSON; for session files with ``line`` (1-based, as the text
        output says ``line N``) beside ``record`` (0-based)."""
        entry = {**finding.to_dict(_FINDING_KEYS), "provider_message": finding.message}
        if get_spec(self.format).line_based:
            entry["line"] = finding.record + 1 if finding.record is not None else None
        return entry


def _escapes(finding: HistoryFinding) -> bool:
    """Whether the finding's JSON holds a lone surrogate (its text names a call id
    read from the file as it was)."""
    return any(
        text is not None and not text.isascii() and has_lone_surrogate(text)
        for text in (finding.message, finding.call_id)
    )


class KeptFindings(SpilledItems[HistoryFinding]):
    """Every finding of a history (:class:`FindingTally` with ``keep=None``), the first
    ones in memory and the others spilled to a temporary file
    (:class:`~agc._core.spill.SpilledItems`, which says whether one holds a lone
    surrogate); ``counts``: how many of each code, once the report is made."""

    __slots__ = ("counts",)

    def __init__(self, base: KeptFindings | None = None) -> None:
        super().__init__(what="findings", mark=_escapes, base=base)
        self.counts: dict[str, int] | None = None


class FindingTally:
    """Findings gathered one at a time, held as counts per code and the first ``keep``
    of them (``None``: every one), so a report of a long history holds a bounded number
    of findings however many it counts. The first finding of each code is held beyond
    ``keep`` too, so the report's verdict (an ``error`` finding held) is the one of
    every finding. Every finding (``keep=None``) is held in :class:`KeptFindings`,
    whose memory is bounded too.

    Raises:
        FileWriteError: (as findings are added) the temporary file of the findings
            cannot be written (disk full …).
    """

    __slots__ = ("_codes", "counts", "examples", "keep")

    def __init__(self, keep: int | None = None) -> None:
        self.keep = keep
        self.counts: dict[str, int] = {}
        self.examples: list[HistoryFinding] | KeptFindings = (
            [] if keep is not None else KeptFindings()
        )
        self._codes: set[str] = set()  # the codes of the examples

    def add(self, finding: HistoryFinding) -> None:
        self.counts[finding.code] = self.counts.get(finding.code, 0) + 1
        self._hold(finding)

    def _hold(self, finding: HistoryFinding) -> None:
        keep = self.keep
        if keep is None or len(self.examples) < keep or finding.code not in self._codes:
            self.examples.append(finding)
            self._codes.add(finding.code)

    def add_found(self, found: Iterable[_Found]) -> None:
        """:meth:`add` of the finding of each rule found, made only when it is held."""
        counts, examples, codes, keep = self.counts, self.examples, self._codes, self.keep
        for item in found:
            code = item[1]
            counts[code] = counts.get(code, 0) + 1
            if keep is None or len(examples) < keep or code not in codes:
                examples.append(_made(item))
                codes.add(code)

    def extend(self, findings: Iterable[HistoryFinding]) -> None:
        for finding in findings:
            self.add(finding)

    def merge(self, other: FindingTally) -> None:
        """Add the findings ``other`` gathered (after those gathered here). When both
        keep every finding and none is gathered here yet, ``other``'s are shared, not
        copied (those it holds now: any it takes after are not added here)."""
        if (
            isinstance(self.examples, KeptFindings)
            and isinstance(other.examples, KeptFindings)
            and not self.examples
        ):
            self.examples = KeptFindings(base=other.examples)
        else:
            for finding in other.examples:
                self._hold(finding)
        for code, count in other.counts.items():
            self.counts[code] = self.counts.get(code, 0) + count

    def report(self, format: FormatName, messages: int, calls: int, results: int) -> HistoryReport:
        """The report of the findings gathered (``counts`` only when some were let go);
        its findings a tuple, or the :class:`KeptFindings` (frozen) when every one is
        kept."""
        examples = self.examples
        kept_all = len(examples) == sum(self.counts.values())
        findings: Sequence[HistoryFinding]
        if isinstance(examples, KeptFindings):
            examples.freeze()
            examples.counts = dict(self.counts)
            findings = examples
        else:
            findings = tuple(examples)
        return HistoryReport(
            format,
            messages,
            calls,
            results,
            findings=findings,
            counts=None if kept_all else dict(self.counts),
        )


@collector_paused
def check_history(messages: Sequence[Any], format: FormatName) -> HistoryReport:
    """Check a history the way its provider would.

    Args:
        messages: for ``openai-chat``/``anthropic``/``openai-responses`` the messages or
            items as sent to the API; for ``codex-rollout``/``claude-code`` the parsed
            lines of the session file (a line that is not JSON may be given as its text).
        format: the format name.

    Raises:
        HistoryFormatError: the messages do not fit the format at all.
    """
    spec = get_spec(format)
    return check_messages(spec.read(messages).messages, format)


def verify_history(messages: Sequence[Any], format: FormatName) -> HistoryReport:
    """Like :func:`check_history`, but raise when the history breaks a rule.

    Raises:
        HistoryInvalidError: with the report, when any finding exists.
        HistoryFormatError: the messages do not fit the format at all.
    """
    report = check_history(messages, format)
    if not report.valid:
        codes = sorted({finding.code for finding in report.findings})
        raise HistoryInvalidError(
            f"the {format} history breaks {len(report.findings)} provider rule(s): "
            + ", ".join(codes),
            report=report,
        )
    return report


def check_loaded(history: History, *, keep: int | None = None) -> HistoryReport:
    """:func:`check_messages` of a history read from a file, plus what only the file
    shows, after the history's own findings: a torn last line (``torn-tail``), a Gemini
    CLI model message recorded without any part (``unrecorded-call``, a warning).

    ``keep``: hold only the first ``keep`` findings (and the first of each code) beside
    the counts per code (:class:`FindingTally`); ``None``: every finding. The findings
    of messages a streamed read let go of (``History.settled``) come first.
    """
    settled = history.settled
    report = check_messages(history.messages, history.format, settled=settled)
    extra = list(unrecorded_findings(history))
    finding = torn_tail_finding(history)
    if finding is not None:
        extra.append(finding)
    earlier = settled.tallies if settled is not None else None
    if keep is None and earlier is None:
        if not extra:
            return report
        return replace(report, findings=(*report.findings, *extra))
    tally = FindingTally(keep)
    if earlier is not None:
        tally.merge(earlier[0])
    tally.extend(report.findings)
    if earlier is not None:
        tally.merge(earlier[1])
    tally.extend(extra)
    return tally.report(report.format, report.messages, report.calls, report.results)


def unrecorded_findings(history: History, offset: int = 0) -> list[HistoryFinding]:
    """The ``unrecorded-call`` warnings of a Gemini CLI session (none for another
    history); ``offset``: the messages before its view (a streamed read let go of)."""
    if history.format != "gemini-chat":  # only the Gemini CLI reader keeps bare messages
        return []
    from agc.resume._formats.gemini_chat import GeminiHistory  # noqa: PLC0415 - loaded by then

    if not isinstance(history, GeminiHistory):
        return []
    return [
        Finding(
            "unrecorded-call",
            "a model message recorded without any part. Gemini CLI writes "
            "a call only once it has finished, so the client stopped in this turn and a "
            "call it was running (which may have run) is not in the file; the client does "
            "not send this message.",
            severity="warning",
            message_index=index + offset,
            record=line,
        )
        for line, index in history.bare
    ]


def torn_tail_finding(history: History) -> HistoryFinding | None:
    """The ``torn-tail`` finding of a session file whose last line is torn, else None."""
    if history.torn is None or history.lines is None:
        return None
    from agc.resume._formats.torn import describe_torn  # noqa: PLC0415 - a torn file's only

    held = describe_torn(history.lines[history.torn])
    return Finding(
        "torn-tail",
        f"the last line (line {history.torn + 1}) was cut off by a crash: no final line "
        f"break and not JSON. It held {held.describe()}, which is lost; the client never "
        "saw it saved.",
        message_index=len(history.messages) + _count(history.settled),
        record=history.torn,
        call_id=held.call_id or held.result_id,
    )


def check_messages(
    messages: Sequence[Message], format: FormatName, *, settled: Settled | None = None
) -> HistoryReport:
    """:func:`check_history` on a neutral view (pure).

    ``settled``: the messages before ``messages`` were let go of (a session file read
    with ``settle``); ``messages`` are then numbered after them, and their call ids
    count as calls already answered.
    """
    found, calls, results = _check(messages, format, settled)
    ordered = tuple(_made(item) for item in sorted(found, key=_found_index))
    return HistoryReport(format, len(messages) + _count(settled), calls, results, findings=ordered)


def tally_messages(
    messages: Sequence[Message], format: FormatName, tally: FindingTally, *, settled: Settled
) -> tuple[bool, int, int]:
    """:func:`check_messages` of one part of a history read in parts, its findings added
    to ``tally`` as :meth:`FindingTally.extend` adds the report's (in history order),
    only those the tally holds made: ``(valid, calls, results)`` as the report's."""
    found, calls, results = _check(messages, format, settled)
    found.sort(key=_found_index)
    tally.add_found(found)
    return not found, calls, results


def _check(
    messages: Sequence[Message], format: FormatName, settled: Settled | None
) -> tuple[list[_Found], int, int]:
    """The rules ``messages`` break (found, every one an error), and their calls and
    results (with ``settled``'s)."""
    family = get_spec(format).family
    offset = _count(settled)
    prior: Container[str] = settled.call_ids if settled is not None else ()
    if family == "anthropic":
        found = _check_anthropic(messages, offset, prior)
    elif family == "responses":
        found = _check_responses(messages, offset, prior)
    elif family == "gemini":
        found = _check_gemini(messages, offset, prior)
    elif settled is not None:  # only session files settle
        raise ValueError(f"a {format} history is never settled")
    else:
        found = _check_chat(messages)
    calls = results = 0
    for message in messages:
        for block in message.blocks:
            kind = block.kind
            if kind == "call":
                calls += 1
            elif kind == "result":
                results += 1
    if settled is not None:
        calls += settled.calls
        results += settled.results
    return found, calls, results


def _count(settled: Settled | None) -> int:
    return settled.messages if settled is not None else 0


_Found: TypeAlias = tuple[int, HistoryFindingCode, Message, "str | None", str, "int | None"]
"""A broken rule found, before its finding is made (:func:`_made`): ``(message index,
code, message, call id, text)``. A long history can break one rule per call; a check
in parts makes only the findings its tally holds (:func:`tally_messages`)."""


def _finding(
    code: HistoryFindingCode,
    index: int,
    message: Message,
    call_id: str | None,
    text: str,
    record: int | None = None,
) -> _Found:
    """A broken rule found in ``messages[index]``; ``record``: the record (0-based) of
    the block it is about when the call id does not tell it (a second result of a call:
    the first one's record is the one the call id would name)."""
    return (index, code, message, call_id, text, record)


def _made(found: _Found) -> HistoryFinding:
    """The finding of a broken rule found."""
    index, code, message, call_id, text, record = found
    if record is not None:
        return Finding(code, text, message_index=index, record=record, call_id=call_id)
    # A message read from several native records (consecutive lines of one role) is
    # located by the record of the block the finding names, else by its first record.
    record = message.origin
    if call_id is not None:
        record = next(
            (
                block.origin
                for block in message.blocks
                if block.call_id == call_id and block.origin is not None
            ),
            record,
        )
    return Finding(code, text, message_index=index, record=record, call_id=call_id)


def _found_index(found: _Found) -> int:
    return found[0]


def _check_chat(messages: Sequence[Message]) -> list[_Found]:
    findings: list[_Found] = []
    open_ids: set[str] = set()  # calls of the last assistant message, still answerable
    answered: set[str] = set()
    in_tool_run = False
    for index, message in enumerate(messages):
        if message.role == "tool":
            result = message.blocks[0]
            call_id = result.call_id
            if not in_tool_run or call_id not in open_ids:
                findings.append(
                    _finding(
                        "orphan-tool-result",
                        index,
                        message,
                        call_id,
                        "Invalid parameter: messages with role 'tool' must be a response to a "
                        "preceding message with 'tool_calls'.",
                    )
                )
            elif call_id in answered:
                findings.append(
                    _finding(
                        "duplicate-tool-result",
                        index,
                        message,
                        call_id,
                        f"tool_call_id {call_id} has more than one response message.",
                    )
                )
            else:
                answered.add(call_id)
            continue
        findings.extend(_unanswered_chat(messages, index, open_ids, answered))
        open_ids, answered, in_tool_run = set(), set(), False
        calls = message.calls() if message.role == "assistant" else []
        seen: set[str] = set()
        for call in calls:
            if call.call_id is None:
                findings.append(
                    _finding("tool-call-unanswered", index, message, None, "tool call without id")
                )
            elif call.call_id in seen:
                findings.append(
                    _finding(
                        "duplicate-call-id",
                        index,
                        message,
                        call.call_id,
                        f"Duplicate tool_call id {call.call_id} in one assistant message.",
                    )
                )
            seen.add(call.call_id or "")
        open_ids = {call.call_id for call in calls if call.call_id is not None}
        in_tool_run = bool(calls)
    findings.extend(_unanswered_chat(messages, len(messages), open_ids, answered))
    return findings


def _unanswered_chat(
    messages: Sequence[Message], end: int, open_ids: set[str], answered: set[str]
) -> list[_Found]:
    missing = sorted(open_ids - answered)
    if not missing:
        return []
    start = end - 1
    while start >= 0 and messages[start].role == "tool":
        start -= 1
    text = (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        "to each 'tool_call_id'. The following tool_call_ids did not have response messages: "
    )
    return [
        _finding("tool-call-unanswered", start, messages[start], call_id, text + call_id)
        for call_id in missing
    ]


_GEMINI_COUNT: Final = (
    "Please ensure that the number of function response parts is equal to the number of "
    "function call parts of the function call turn."
)
_GEMINI_ORDER: Final = (
    "Please ensure that function response turn comes immediately after a function call turn."
)


def _check_gemini(
    messages: Sequence[Message], offset: int = 0, prior: Container[str] = ()
) -> list[_Found]:
    """The Gemini API's rule (``generateContent``): the turn after a model turn with
    ``functionCall`` parts holds exactly one ``functionResponse`` part per call, and a
    ``functionResponse`` only follows such a turn. ``messages`` are numbered from
    ``offset`` (``contents[N]``), after settled messages whose call ids are ``prior``."""
    findings: list[_Found] = []
    all_ids: set[str] = set()
    for local, message in enumerate(messages):
        index = local + offset
        if message.role == "assistant":
            calls = message.calls()
            for call in calls:
                if call.call_id is not None and (call.call_id in all_ids or call.call_id in prior):
                    findings.append(
                        _finding(
                            "duplicate-call-id",
                            index,
                            message,
                            call.call_id,
                            f"contents[{index}]: function call id {call.call_id} is used twice",
                        )
                    )
                if call.call_id is not None:
                    all_ids.add(call.call_id)
            following = messages[local + 1] if local + 1 < len(messages) else None
            answered = (
                {block.call_id for block in following.results()}
                if following is not None and following.role == "user"
                else set()
            )
            for call in calls:
                if call.call_id not in answered or call.call_id is None:
                    findings.append(
                        _finding(
                            "tool-call-unanswered",
                            index,
                            message,
                            call.call_id,
                            f"contents[{index}]: {_GEMINI_COUNT} Unanswered: {call.call_id}",
                        )
                    )
            continue
        results = message.results()
        if not results:
            continue
        expected = _answerable(messages, local)
        seen: set[str | None] = set()
        for block in results:
            if not expected or block.call_id not in expected:
                text = _GEMINI_ORDER if not expected else _GEMINI_COUNT
                findings.append(
                    _finding(
                        "orphan-tool-result",
                        index,
                        message,
                        block.call_id,
                        f"contents[{index}]: {text} No call {block.call_id} in the turn before.",
                    )
                )
            elif block.call_id in seen:
                findings.append(
                    _finding(
                        "duplicate-tool-result",
                        index,
                        message,
                        block.call_id,
                        f"contents[{index}]: {_GEMINI_COUNT} A second response to {block.call_id}.",
                        block.origin,
                    )
                )
            seen.add(block.call_id)
    return findings


def _check_anthropic(
    messages: Sequence[Message], offset: int = 0, prior: Container[str] = ()
) -> list[_Found]:
    """The Messages API's rules; ``messages`` are numbered from ``offset``, after
    settled messages whose call ids are ``prior``."""
    findings: list[_Found] = []
    all_ids: set[str] = set()
    for local, message in enumerate(messages):
        index = local + offset
        if message.role == "assistant":
            first_call: int | None = None
            late = False
            for position, block in enumerate(message.blocks):
                if block.kind == "call":
                    first_call = position if first_call is None else first_call
                    if block.call_id is not None and (
                        block.call_id in all_ids or block.call_id in prior
                    ):
                        findings.append(
                            _finding(
                                "duplicate-call-id",
                                index,
                                message,
                                block.call_id,
                                f"messages.{index}: `tool_use` ids must be unique: {block.call_id}",
                            )
                        )
                    if block.call_id is not None:
                        all_ids.add(block.call_id)
                elif block.kind == "result":
                    findings.append(_misplaced_result(index, position, message, block.call_id))
                elif first_call is not None and block.kind in {"text", "other"} and not late:
                    late = True  # reported once per message
                    findings.append(
                        _finding(
                            "text-after-tool-use",
                            index,
                            message,
                            None,
                            f"messages.{index}: content after a `tool_use` block; "
                            "`tool_use` blocks must come last in an assistant message.",
                        )
                    )
            calls = message.calls()
            if calls:
                following = messages[local + 1] if local + 1 < len(messages) else None
                answered = (
                    {block.call_id for block in following.results()}
                    if following is not None and following.role == "user"
                    else set()
                )
                missing = [
                    call.call_id or "(no id)" for call in calls if call.call_id not in answered
                ]
                for call_id in missing:
                    findings.append(
                        _finding(
                            "tool-call-unanswered",
                            index,
                            message,
                            call_id,
                            f"messages.{index}: `tool_use` ids were found without `tool_result` "
                            f"blocks immediately after: {call_id}. Each `tool_use` block must "
                            "have a corresponding `tool_result` block in the next message.",
                        )
                    )
            continue
        for position, block in enumerate(message.blocks):
            if block.kind == "call":
                findings.append(
                    _finding(
                        "tool-call-unanswered",
                        index,
                        message,
                        block.call_id,
                        f"messages.{index}.content.{position}: a `tool_use` block in a "
                        f"{message.role} message: {block.call_id}. `tool_use` blocks are "
                        "the assistant's; no `tool_result` can answer this one.",
                    )
                )
        results = message.results()
        if not results:
            continue
        expected = _answerable(messages, local)
        seen: set[str | None] = set()
        text_seen = False
        for position, block in enumerate(message.blocks):
            if block.kind != "result":
                text_seen = True
                continue
            if text_seen:
                findings.append(
                    _finding(
                        "tool-result-not-first",
                        index,
                        message,
                        block.call_id,
                        f"messages.{index}.content.{position}: `tool_result` blocks must come "
                        "first in the user message, before any other content.",
                    )
                )
                text_seen = False
            if message.role != "user" or block.call_id not in expected:
                findings.append(
                    _finding(
                        "orphan-tool-result",
                        index,
                        message,
                        block.call_id,
                        f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
                        f"`tool_result` blocks: {block.call_id}. Each `tool_result` block must "
                        "have a corresponding `tool_use` block in the previous message.",
                    )
                )
            elif block.call_id in seen:
                findings.append(
                    _finding(
                        "duplicate-tool-result",
                        index,
                        message,
                        block.call_id,
                        f"messages.{index}.content.{position}: more than one `tool_result` for "
                        f"`tool_use` id {block.call_id}.",
                        block.origin,
                    )
                )
            seen.add(block.call_id)
    return findings


def _misplaced_result(index: int, position: int, message: Message, call_id: str | None) -> _Found:
    """A ``tool_result`` block in an assistant message: it answers no call (a result is
    only read from the user message after the call)."""
    return _finding(
        "orphan-tool-result",
        index,
        message,
        call_id,
        f"messages.{index}.content.{position}: unexpected `tool_use_id` found in "
        f"`tool_result` blocks: {call_id}. Each `tool_result` block must have a "
        "corresponding `tool_use` block in the previous message.",
    )


def _check_responses(
    messages: Sequence[Message], offset: int = 0, prior: Container[str] = ()
) -> list[_Found]:
    """The Responses API's rules; ``messages`` are numbered from ``offset``, after
    settled items whose call ids (each answered) are ``prior``."""
    findings: list[_Found] = []
    calls: dict[str, int] = {}  # call id -> local position
    answered: set[str] = set()
    for local, message in enumerate(messages):
        index = local + offset
        block = message.blocks[0]
        if block.kind == "call":
            if block.call_id is None:
                findings.append(
                    _finding("tool-call-unanswered", index, message, None, "call without call_id")
                )
            elif block.call_id in calls or block.call_id in prior:
                findings.append(
                    _finding(
                        "duplicate-call-id",
                        index,
                        message,
                        block.call_id,
                        f"Duplicate item call_id {block.call_id}.",
                    )
                )
            else:
                calls[block.call_id] = local
        elif block.kind == "result":
            result_id = block.call_id
            if result_id is None or (result_id not in calls and result_id not in prior):
                findings.append(
                    _finding(
                        "orphan-tool-result",
                        index,
                        message,
                        block.call_id,
                        "No tool call found for function call output with call_id "
                        f"{block.call_id}.",
                    )
                )
            elif result_id in answered or result_id in prior:
                findings.append(
                    _finding(
                        "duplicate-tool-result",
                        index,
                        message,
                        result_id,
                        f"Duplicate function call output for call_id {result_id}.",
                    )
                )
            else:
                answered.add(result_id)
        elif block.kind == "reasoning" and not _reasoning_followed(messages, local):
            item_id = block.raw.get("id") if isinstance(block.raw, dict) else None
            findings.append(
                _finding(
                    "reasoning-without-following",
                    index,
                    message,
                    None,
                    f"Item '{item_id}' of type 'reasoning' was provided without its required "
                    "following item.",
                )
            )
    for call_id, local in calls.items():
        if call_id not in answered:
            findings.append(
                _finding(
                    "tool-call-unanswered",
                    local + offset,
                    messages[local],
                    call_id,
                    f"No tool output found for function call {call_id}.",
                )
            )
    return findings


def _reasoning_followed(messages: Sequence[Message], index: int) -> bool:
    """A reasoning item is followed (after any further reasoning) by an assistant output."""
    # By position: slicing the rest of the history for each item made the check quadratic.
    for position in range(index + 1, len(messages)):
        message = messages[position]
        block = message.blocks[0]
        if block.kind == "reasoning":
            continue
        return message.role == "assistant" and block.kind in _ASSISTANT_OUTPUT
    return False


def _answerable(messages: Sequence[Message], index: int) -> set[str | None]:
    """The call ids the message at ``index`` may answer: those of the assistant message
    right before it (none when that is not the assistant's)."""
    previous = messages[index - 1] if index > 0 else None
    if previous is None or previous.role != "assistant":
        return set()
    return {call.call_id for call in previous.calls()}


def pending_warnings(messages: Sequence[Message], state: ToolCallState | None) -> tuple[str, ...]:
    """A warning when the snapshot's ``pendingToolCallId`` names no call of the history:
    the state and the messages disagree, so the in-flight call cannot be told."""
    if state is None or not state.in_flight or state.pending_tool_call_id is None:
        return ()
    pending = state.pending_tool_call_id
    if any(call.call_id == pending for message in messages for call in message.calls()):
        return ()
    return (
        f"the snapshot says call {pending} was in flight (pendingToolCallId), but the "
        "history holds no call with that id: the in-flight call cannot be told",
    )
