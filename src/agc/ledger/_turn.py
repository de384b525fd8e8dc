"""Recording one turn from an event stream: decode, record, finish.

:func:`record_turn` is the whole loop the ``agc ledger record`` command runs, for any
caller that has a stream of Codex events (app-server notifications, ``codex exec
--json`` lines or a rollout file): it opens the attempt, feeds every line to an
:class:`~agc.ledger.EventDecoder`, records each item, and always finishes the attempt,
also when reading the stream fails or the caller is interrupted.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Iterable, Sequence
from typing import IO, TYPE_CHECKING

from agc._core.digest import DEFAULT_ALGORITHM, Algorithm
from agc._core.fs import describe_os_error
from agc._core.jsonl import unix_ms
from agc.errors import FileUnreadableError
from agc.ledger._events.decode import EventDecoder, InputFormat
from agc.ledger._lines import OverlongLine, event_lines
from agc.ledger._policy import LedgerPolicy
from agc.ledger._writer import TurnOutcome, TurnRecorder

if TYPE_CHECKING:
    from agc._core.signing import SigningKey

__all__ = ["record_turn"]


def record_turn(
    stream: Iterable[bytes | str | OverlongLine] | IO[bytes],
    *,
    project: str | os.PathLike[str],
    client_turn_id: str,
    prompt: str,
    attachments: Sequence[object] = (),
    policy: LedgerPolicy | None = None,
    input_format: InputFormat = "auto",
    agent_roots: Sequence[str] = (),
    completed: bool | None = None,
    source: str = "the event stream",
    on_progress: Callable[[int], None] | None = None,
    clock: Callable[[], int] = unix_ms,
    algorithm: Algorithm = DEFAULT_ALGORITHM,
    signing_key: SigningKey | None = None,
) -> TurnOutcome:
    """Record one attempt of a turn from ``stream`` and finish it.

    Args:
        stream: the input: an open binary file or ``sys.stdin.buffer`` (read with
            :func:`agc.ledger.event_lines`: a line over 1 MiB is read through in
            pieces, counted in ``outcome.input.overlong_lines`` and decoded from a copy
            whose strings are cut to :data:`agc.ledger.KEPT_STRING_BYTES` bytes), or
            the lines themselves (``bytes`` or ``str``, with or without ``\\n``, or
            :class:`agc.ledger.OverlongLine`), for example a list of JSON strings.
        project: the project root (where ``.agent/`` lives).
        client_turn_id: the client's turn id (6-160 of ``A-Z a-z 0-9 -``).
        prompt: the user's original text (only its SHA-256 and length are recorded).
        attachments: the offered attachment objects (``name``, ``localPath``,
            ``mediaType``, ``size``, ``status``).
        policy: the ledger policy (default: the ``generic`` preset).
        input_format: ``"auto"`` (each line recognized on its own), ``"app-server"``,
            ``"exec"`` or ``"rollout"``.
        agent_roots: absolute folders the agent had as its project root, when a past
            run is audited from another place.
        completed: the turn's outcome; ``None`` takes what the input says (a turn that
            completed), so an input that ends without saying so is not completed.
        source: how error messages name the stream (a file name, ``"stdin"``).
        on_progress: called with the number of bytes (of ``bytes`` lines and overlong
            lines) or characters (of ``str`` lines) read so far, after each line.
        clock: Unix milliseconds for ``recordedAtMs`` (tests pass a fixed one).
        algorithm: digest algorithm of a new turn file's seal.
        signing_key: sign the attempt's seal record with this Ed25519 key
            (:mod:`agc._core.signing`; ``agc ledger check --trusted-key`` checks it).

    Returns:
        The :class:`TurnOutcome`; ``outcome.input`` holds the decoder's counts. Ledger
        write failures never raise: they set ``outcome.audit_write_failed``.

    Raises:
        TurnIdInvalidError: the id breaks the rule (nothing is written).
        UsageError: an agent root is not absolute, or ``input_format`` is unknown.
        StoreError: the project folder does not exist.
        FileUnreadableError: reading ``stream`` failed (exit 3); the attempt was finished first
            (``completed: false``), so the turn file stays sealed.
    """
    recorder = TurnRecorder.start(
        project,
        client_turn_id,
        prompt=prompt,
        attachments=attachments,
        policy=policy,
        agent_roots=agent_roots,
        clock=clock,
        algorithm=algorithm,
        signing_key=signing_key,
    )
    decoder = EventDecoder(input_format)
    done = 0
    feed, observe = decoder.feed, recorder.observe  # once, not per line
    binary = isinstance(stream, io.BufferedIOBase | io.RawIOBase)
    lines = event_lines(stream) if binary else stream  # type: ignore[arg-type]
    try:
        counting = False
        for line in lines:
            if isinstance(line, OverlongLine):
                done += line.size
                if line.shrunk is None:
                    decoder.skip_overlong()
                    if on_progress is not None:
                        on_progress(done)
                    continue
                items = decoder.feed_overlong(line.shrunk)
            else:
                done += len(line)
                items = feed(line)
            if items:
                for item in items:
                    observe(item)
                if not counting and recorder.saturated:
                    # Later items change nothing but the input's counts.
                    decoder.count_only()
                    counting = True
            if on_progress is not None:
                on_progress(done)
        for item in decoder.finish():
            recorder.observe(item)
    except OSError as exc:
        # The attempt still ends in the ledger: a turn is finished on error too.
        recorder.finish(completed=False, input_stats=decoder.stats)
        raise FileUnreadableError(
            f"reading events from {source} failed: {describe_os_error(exc)}"
        ) from exc
    except BaseException:
        recorder.finish(completed=False, input_stats=decoder.stats)
        raise
    outcome = decoder.completed is True if completed is None else completed
    return recorder.finish(completed=outcome, input_stats=decoder.stats)
