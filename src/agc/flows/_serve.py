"""The audited serve sink: every turn of :mod:`agc.serve` sealed as an agc run, with a
turn ledger.

:class:`AuditSink` is the :class:`agc.serve.TurnSink` that makes ``agc serve`` audited:
each turn is a run written with :func:`agc.integrity.open_run` (the request, each event
and the reply in its transcript, tool calls in its tool events, sealed when the turn
ends and signed when a signing key is set) plus a turn ledger from the same events
(:class:`agc.ledger.TurnRecorder`). A crash of the service leaves the open turns' runs
unsealed: :meth:`AuditSink.unsealed_runs` finds them and :func:`recover_turn_runs`
seals them with :func:`agc.integrity.recover_run`.

Sealing needs new file descriptors (the sidecar, the manifest, the chain link) when a
loaded process may have none left (``EMFILE``): the sink keeps a few descriptors
reserved from its start and, when a seal fails, gives them back and seals what reached
the disk with :func:`agc.integrity.recover_run`. A run that still cannot be sealed
stays on disk, every accepted record in it and a crash checkpoint after them, for
``agc recover``.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Final

from agc._core.sidecar import sidecar_paths
from agc._core.store import StoreLayout
from agc.errors import AgcError, StoreError
from agc.integrity import (
    ArtifactSeal,
    RunWriters,
    SigningKey,
    open_run,
    read_run_manifest,
    recover_run,
)
from agc.ledger import TurnRecorder, preset_policy
from agc.serve import (
    Blocker,
    TraceEvent,
    TurnEnd,
    TurnInfo,
    manifest_attributes,
    reply_record,
    request_record,
    tool_event,
    transcript_record,
)

__all__ = ["AuditSink", "recover_turn_runs"]

TURN_RUN_PREFIX: Final = "trc-"
#: Descriptors kept open (on the null device) for sealing under descriptor exhaustion:
#: a seal opens the sidecar, the manifest and the chain files (and their temporary files).
RESERVED_DESCRIPTORS: Final = 16


class DescriptorReserve:
    """A few open descriptors held back, given up when a seal needs them.

    Args:
        count: descriptors to hold (on ``os.devnull``, close-on-exec).

    Thread-safe. :meth:`released` closes them for the duration of a ``with`` block and
    takes them again afterwards (as many as the process can open then): each seal runs
    inside it, so that it finds descriptors even when the rest of the process took
    every other one.
    """

    def __init__(self, count: int = RESERVED_DESCRIPTORS) -> None:
        self.count = count
        self._fds: list[int] = []
        self._lock = threading.Lock()
        self._users = 0
        self.refill()

    @property
    def held(self) -> int:
        return len(self._fds)

    def refill(self) -> None:
        """Open descriptors up to :attr:`count` (stops quietly when none is left)."""
        with self._lock:
            while len(self._fds) < self.count:
                try:
                    self._fds.append(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
                except OSError:
                    return

    def release(self) -> None:
        """Close every held descriptor."""
        with self._lock:
            for fd in self._fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._fds.clear()

    @contextlib.contextmanager
    def released(self) -> Iterator[None]:
        """Without the held descriptors for the block; taken again when the last of
        the threads inside such blocks leaves."""
        with self._lock:
            self._users += 1
        self.release()
        try:
            yield
        finally:
            with self._lock:
                self._users -= 1
                last = self._users == 0
            if last:
                self.refill()


@dataclass
class _OpenTurn:
    run: RunWriters
    recorder: TurnRecorder | None
    tool_events: int = 0
    events: int = 0


class AuditSink:
    """Seals each turn as an agc run and records its turn ledger.

    Args:
        store: the agc store folder (``--store`` / ``$AGC_HOME`` / ``~/.agc``).
        signing_key: sign each run manifest, if given.
        ledger_root: the folder whose ``.agent/`` holds the turn ledger (``None``: no
            ledger); created when missing. The ledger hashes the files of the turn's
            workspace (:attr:`agc.serve.TurnInfo.workspace`), wherever it is written.
        log: called with one line per finished turn (``None``: silent).
        reserve: descriptors held for sealing under exhaustion (``None``: a
            :class:`DescriptorReserve` of :data:`RESERVED_DESCRIPTORS`).

    The run id is the trace id (``trc-<32 hex>``), which is also the ledger's turn id.
    Thread-safe across turns; one turn's calls come one after the other.

    Raises (from the turn callbacks): the errors of :func:`agc.integrity.open_run` and
    of its writers (``StoreError``, ``FileWriteError``: exit 3); a turn whose run cannot
    be sealed even with the reserve given back is left unsealed on disk for
    :func:`recover_turn_runs`.
    """

    def __init__(
        self,
        *,
        store: Path | None,
        signing_key: SigningKey | None,
        ledger_root: Path | None,
        log: Callable[[str], None] | None = None,
        reserve: DescriptorReserve | None = None,
    ) -> None:
        self.log = log
        self.layout = StoreLayout.at(store)
        self.store = store
        self.signing_key = signing_key
        self.ledger_root = ledger_root
        self.reserve = reserve if reserve is not None else DescriptorReserve()
        self._turns: dict[str, _OpenTurn] = {}
        self._lock = threading.Lock()

    def check(self) -> Blocker | None:
        """A preflight check: the store's transcript folder can take a new file
        (``None``), else the ``audit_store_not_writable`` blocker."""
        folder = self.layout.artifact_path("probe", "transcript").parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(prefix=".agc-serve-probe-", dir=folder)
        except OSError as exc:
            return Blocker(
                "audit_store_not_writable", f"the agc store is not writable ({exc.strerror})"
            )
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(probe)
        return None

    def on_turn_start(self, turn: TurnInfo) -> None:
        """Open the turn's run and write its request record (flushed)."""
        run = open_run(
            turn.trace_id,
            store=self.store,
            signing_key=self.signing_key,
            attributes=manifest_attributes(turn),
        )
        try:
            run.transcript.write(request_record(turn))
            # A first checkpoint of each file opens its checkpoint file now, while
            # descriptors are to be had: the one before the seal needs none.
            run.transcript.checkpoint()
            run.tool_events.checkpoint()
        except BaseException:
            run.abort()
            raise
        recorder = None
        if self.ledger_root is not None:
            try:
                self.ledger_root.mkdir(parents=True, exist_ok=True)
                recorder = TurnRecorder.start(
                    turn.workspace,
                    turn.trace_id,
                    prompt=turn.message,
                    attachments=[
                        {"name": PurePosixPath(path).name, "localPath": path, "status": "offered"}
                        for path in turn.attachments
                    ],
                    policy=preset_policy("direct-project"),  # as before generic became the default
                    ledger_root=self.ledger_root,
                )
            except BaseException:
                run.abort()
                raise
        with self._lock:
            self._turns[turn.trace_id] = _OpenTurn(run, recorder)

    def on_event(self, turn: TurnInfo, event: TraceEvent) -> None:
        """Write one event to the transcript (and a tool call to the tool events), each
        flushed at once: a crash of the service loses none of them."""
        with self._lock:
            open_turn = self._turns[turn.trace_id]
        open_turn.run.transcript.write(transcript_record(event))
        open_turn.events += 1
        record = tool_event(event)
        if record is not None:
            open_turn.run.tool_events.write(record)
            open_turn.tool_events += 1
            open_turn.run.tool_events.flush()
        # Each event reaches the file at once: a crash of the service loses none of
        # them (agc recover seals what is there).
        open_turn.run.transcript.flush()
        if open_turn.recorder is not None and event.source == "codex":
            open_turn.recorder.observe_notification(
                {"method": event.method, "params": event.params}
            )

    def on_turn_end(self, turn: TurnInfo, end: TurnEnd) -> Mapping[str, Any]:
        """Write the reply, seal (and sign) the run, finish the ledger; returns the turn's
        ``audit`` document (``recorded``, ``runId``, ``sealed``, ``signed``, ``keyId``,
        ``transcript``, ``toolEvents``, ``ledger``; see docs/serve.md)."""
        with self._lock:
            open_turn = self._turns.pop(turn.trace_id)
        try:
            open_turn.run.transcript.write(reply_record(turn, end))
            # Every record vouched for (the checkpoint files are open since the start),
            # then sealed with the reserved descriptors given back.
            open_turn.run.transcript.checkpoint()
            open_turn.run.tool_events.checkpoint()
            with self.reserve.released():
                transcript, tool_events = open_turn.run.close()
        except (AgcError, OSError):
            # Every record reached the file before the seal was tried (the writers flush
            # first): released unsealed, with a crash checkpoint when one can be written.
            open_turn.run.abort()
            try:
                transcript, tool_events = self._seal_with_reserve(turn.trace_id)
            except BaseException:
                if open_turn.recorder is not None:
                    open_turn.recorder.finish(completed=False)
                raise
        except BaseException:
            open_turn.run.abort()  # left unsealed: `agc recover` seals what reached the disk
            if open_turn.recorder is not None:
                open_turn.recorder.finish(completed=False)
            raise
        audit: dict[str, Any] = {
            "recorded": True,
            "runId": turn.trace_id,
            "sealed": True,
            "signed": self.signing_key is not None,
            "keyId": None if self.signing_key is None else self.signing_key.key_id,
            "transcript": {
                "records": transcript.records,
                "algorithm": transcript.algorithm,
                "digest": transcript.digest,
            },
            "toolEvents": {"records": tool_events.records},
            "ledger": None,
        }
        if open_turn.recorder is not None:
            outcome = open_turn.recorder.finish(completed=end.status == "completed")
            audit["ledger"] = {
                "turnLog": outcome.turn_log,
                "attempt": outcome.attempt,
                "itemCount": outcome.item_count,
                "sealed": outcome.seal is not None,
                "dbWritten": outcome.db_written,
                "auditWriteFailed": outcome.audit_write_failed,
            }
        if self.log is not None:
            error = "" if end.error is None else f" ({end.error.get('code')})"
            self.log(
                f"turn {turn.trace_id} of {turn.conversation_id}: {end.status}{error} after "
                f"{end.ended_at_ms - turn.created_at_ms} ms, {end.event_count} events; "
                f"run sealed{', signed' if self.signing_key else ''}"
            )
        return audit

    def _seal_with_reserve(self, run_id: str) -> tuple[ArtifactSeal, ArtifactSeal]:
        """Seal a run whose writers failed to, with the reserved descriptors given back
        (:func:`agc.integrity.recover_run` over what reached the disk); returns the
        transcript's and the tool events' seals.

        Raises:
            AgcError: as :func:`agc.integrity.recover_run` (the run stays unsealed, for
                ``agc recover``).
        """
        with self.reserve.released():
            recover_run(run_id, self.store, signing_key=self.signing_key)
            manifest = read_run_manifest(run_id, self.store)
        if manifest is None:  # pragma: no cover - recover_run wrote it
            raise StoreError(f"run {run_id} has no manifest after its recovery")
        return manifest.artifacts["transcript"], manifest.artifacts["tool-events"]

    def unsealed_runs(self) -> list[str]:
        """Runs of this service with a file that has no seal (a crash), by run id.

        Both files count: the transcript is sealed first, so a crash between its seal
        and that of the tool events leaves a run whose transcript looks done. An
        unreadable store folder gives ``[]``.
        """
        folder = self.layout.artifact_path("probe", "transcript").parent
        try:
            entries = [
                entry
                for entry in folder.iterdir()
                if entry.name.startswith(TURN_RUN_PREFIX) and entry.name.endswith(".jsonl")
            ]
        except OSError:
            return []
        found = []
        for entry in sorted(entries, key=lambda path: path.name):
            run_id = entry.name[: -len(".jsonl")]
            files = (entry, self.layout.artifact_path(run_id, "tool-events"))
            if any(
                path.exists() and not any(side.exists() for side in sidecar_paths(path).values())
                for path in files
            ):
                found.append(run_id)
        return found


def recover_turn_runs(
    run_ids: Iterable[str],
    *,
    store: Path | None,
    signing_key: SigningKey | None,
    on_sealed: Callable[[str], None] | None = None,
    on_failed: Callable[[str, AgcError], None] | None = None,
) -> list[str]:
    """Seal the turn runs a crash left unsealed (:meth:`AuditSink.unsealed_runs`) with
    :func:`agc.integrity.recover_run`, one after the other; returns those it sealed.

    A run that cannot be recovered (a live writer of another service, tampering …) is
    passed to ``on_failed`` with its error and skipped; never raises an
    :class:`~agc.errors.AgcError`.
    """
    sealed = []
    for run_id in run_ids:
        try:
            recover_run(run_id, store, signing_key=signing_key)
        except AgcError as exc:
            if on_failed is not None:
                on_failed(run_id, exc)
            continue
        if on_sealed is not None:
            on_sealed(run_id)
        sealed.append(run_id)
    return sealed
