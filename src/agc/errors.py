"""The agc exception tree.

Every error agc raises on purpose derives from :class:`AgcError` and carries a stable
kebab-case :attr:`~AgcError.code`, a :attr:`~AgcError.hint` for the human, and the
:class:`~agc.exitcodes.ExitCode` a command exits with. Library errors (``OSError``,
``json.JSONDecodeError`` …) are wrapped with ``raise … from exc`` so the cause is kept.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, ClassVar

from agc.exitcodes import ExitCode

__all__ = [
    "AgcError",
    "AgentDbError",
    "ArchiveRefusedError",
    "ArtifactSealedError",
    "BadSignatureError",
    "ClientConfigInvalidError",
    "DeploymentManifestError",
    "EmptyInputError",
    "ExtensionIndexInvalidError",
    "ExtensionNameInvalidError",
    "ExtensionNotFoundError",
    "ExtensionUnrecognisedError",
    "ExtensionValueError",
    "FileExistsRefusedError",
    "FileUnreadableError",
    "FileWriteError",
    "HistoryEmptyError",
    "HistoryFormatError",
    "HistoryInvalidError",
    "HookEventInvalidError",
    "HookEventsUnheardError",
    "HookPortTakenError",
    "InPlaceRefusedError",
    "InputError",
    "InputMissingError",
    "JsonInvalidError",
    "KeyInvalidError",
    "LedgerInvalidError",
    "ManifestInvalidError",
    "MissingExtraError",
    "ObservationInvalidError",
    "PolicyInvalidError",
    "ProjectionRefusedError",
    "ReadinessConfigError",
    "RecordInvalidError",
    "RecoveryRefusedError",
    "RepairIncompleteError",
    "ReportInvalidError",
    "RunExistsError",
    "RunIdInvalidError",
    "RunLockedError",
    "RunNotFoundError",
    "SessionFileChangedError",
    "SessionFileMissingError",
    "SidecarInvalidError",
    "SidecarMismatchError",
    "SnapshotInvalidError",
    "SnapshotNotFoundError",
    "SnapshotTamperedError",
    "SnapshotUnsealedError",
    "StoreError",
    "TornTailError",
    "TurnIdInvalidError",
    "UnknownKeyError",
    "UnsafePathError",
    "UnsealedRunError",
    "UnsignedError",
    "UrlInvalidError",
    "UsageError",
    "VerificationError",
    "WriteFailedError",
    "WriterClosedError",
]


class AgcError(Exception):
    """Root of every error agc raises deliberately.

    Attributes:
        code: stable kebab-case identifier, safe to match on in scripts.
        hint: one sentence telling the user what to do next.
        exit_code: the process exit code a command maps this error to.
    """

    code: ClassVar[str] = "agc-error"
    exit_code: ClassVar[ExitCode] = ExitCode.INTERNAL
    default_hint: ClassVar[str] = ""

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    def to_dict(self) -> dict[str, str]:
        """Return ``{"code", "message", "hint"}`` for JSON error output."""
        return {"code": self.code, "message": self.message, "hint": self.hint}

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled without calling __init__ again (subclasses take keyword-only fields):
        # an error raised in a worker process of `agc-verify --all --jobs N` reaches the
        # parent as itself, not as a broken process pool.
        return (_restore_error, (type(self), self.args, dict(self.__dict__)))


def _restore_error(cls: type[AgcError], args: tuple[Any, ...], state: dict[str, Any]) -> AgcError:
    error = cls.__new__(cls)
    Exception.__init__(error, *args)
    error.__dict__.update(state)
    return error


class UsageError(AgcError):
    """The caller asked for something invalid (exit 2)."""

    code = "usage"
    exit_code = ExitCode.USAGE


class MissingExtraError(UsageError):
    """A feature needs an optional dependency that is not installed (exit 2): an extra of
    the ``agc`` distribution (PEP 508 ``agc[s3]``, declared in ``pyproject.toml``).
    The hint is the ``pip install`` command that adds it to agc as it is installed
    (:meth:`install_hint`): agc is not on PyPI, where ``agc`` is another project."""

    code = "missing-extra"
    default_hint = "in agc's clone: pip install -e '.[all]'"

    @classmethod
    @contextmanager
    def raised_for(cls, extra: str, *, feature: str) -> Iterator[None]:
        """Turn the failed import of a third-party module inside the block into this
        error, naming ``feature`` (what the user asked for: "an s3:// store") and
        ``extra`` (``s3``, ``scale``, ``serve``). A module of agc's own that fails to
        import is a bug and propagates unchanged.

        Raises:
            MissingExtraError: a module outside agc was not found.
        """
        try:
            yield
        except ModuleNotFoundError as exc:
            missing = (exc.name or "").partition(".")[0]
            if not missing or missing == "agc":
                raise
            raise cls(
                f"{feature} needs the optional package {missing!r}, which is not "
                f"installed: it comes with agc's {extra} extra",
                hint=cls.install_hint(extra),
            ) from exc

    @staticmethod
    def install_hint(extra: str, direct_url: str | None = None) -> str:
        """The ``pip install`` command that adds ``extra`` to agc where it was installed
        from, read from the installed distribution's ``direct_url.json`` (PEP 610):

        * a folder (a clone): ``pip install -e '/path/to/agc[s3]'`` (``-e`` when it was
          installed editable);
        * a Git repository: ``pip install 'agc[s3] @ git+https://…@<commit>'``;
        * else (not known): the clone's own, ``in agc's clone: pip install -e '.[s3]'``.

        Never ``pip install 'agc[s3]'``: the ``agc`` on PyPI is an unrelated project.
        ``direct_url``: the file's text (default: read from the installed ``agc``; empty:
        none, as for a distribution installed from an archive or not installed at all).
        """
        # Imported here: every command loads this module, and only this error needs them.
        import json  # noqa: PLC0415
        import shlex  # noqa: PLC0415
        from importlib.metadata import PackageNotFoundError, distribution  # noqa: PLC0415
        from urllib.parse import unquote, urlsplit  # noqa: PLC0415

        if direct_url is None:
            try:
                direct_url = distribution("agc").read_text("direct_url.json")
            except (PackageNotFoundError, OSError):
                direct_url = None
        fallback = f"in agc's clone: pip install -e '.[{extra}]'"
        try:
            where = json.loads(direct_url) if direct_url else None
        except ValueError:
            return fallback
        if not isinstance(where, dict) or not isinstance(where.get("url"), str):
            return fallback
        url = where["url"]
        vcs = where.get("vcs_info")
        if isinstance(vcs, dict) and isinstance(vcs.get("vcs"), str):
            commit = vcs.get("requested_revision") or vcs.get("commit_id")
            at = f"@{commit}" if isinstance(commit, str) and commit else ""
            requirement = f"agc[{extra}] @ {vcs['vcs']}+{url}{at}"
            return f"pip install {shlex.quote(requirement)}"
        parts = urlsplit(url)
        dir_info = where.get("dir_info")
        if parts.scheme != "file" or not isinstance(dir_info, dict):
            return fallback
        editable = "-e " if dir_info.get("editable") is True else ""
        return f"pip install {editable}{shlex.quote(f'{unquote(parts.path)}[{extra}]')}"


class RunIdInvalidError(UsageError):
    """A run id is not 1-128 characters of ``[A-Za-z0-9._-]`` or is ``.``/``..``."""

    code = "run-id-invalid"
    default_hint = "Use 1-128 characters from A-Z a-z 0-9 . _ - (not '.' or '..')."


class RunNotFoundError(UsageError):
    """The store holds nothing of the named run: no manifest, no artifact file (exit 2)."""

    code = "run-not-found"
    default_hint = "Check the run id and --store; `agc runs` lists the runs of the store."


class RunExistsError(UsageError):
    """The store chain already links this run id: a run id is recorded once."""

    code = "run-exists"


class InputError(UsageError):
    """Input data (a file or stdin) cannot be used as given (exit 2)."""

    code = "input-invalid"


class InputMissingError(InputError):
    """A file named on the command line does not exist (exit 2, the same for every command)."""

    code = "input-missing"
    default_hint = "Check the path: agc reads the file you name, it never creates an input."


class EmptyInputError(InputError):
    """The input holds no line at all; nothing was sealed and the run id stays free."""

    code = "input-empty"
    default_hint = "An agent run writes at least one line; --allow-empty seals an empty run."


class JsonInvalidError(InputError, ValueError):
    """Bytes are not JSON under agc's rule: UTF-8, no NaN/Infinity, no duplicate member
    names, no lone surrogates, bounded nesting (RFC 8259 and I-JSON, RFC 7493).

    Also a ``ValueError``, as ``json.JSONDecodeError`` is. Readers of evidence turn it
    into their own finding (``manifest-invalid`` …); the message names the problem.
    """

    code = "json-invalid"
    default_hint = "The file must hold strict JSON (RFC 8259 and RFC 7493)."

    PROBLEMS: ClassVar[frozenset[str]] = frozenset(
        {"not-utf8", "bom", "syntax", "constant", "number", "duplicate", "depth", "surrogate"}
    )

    def __init__(self, message: str, *, problem: str, hint: str | None = None) -> None:
        if problem not in self.PROBLEMS:
            raise ValueError(f"unknown JSON problem {problem!r}")
        super().__init__(message, hint=hint)
        self.problem = problem
        """What is wrong, one of :attr:`PROBLEMS` (``"duplicate"``, ``"depth"`` …)."""


class RecordInvalidError(InputError):
    """A record is not a JSON object, holds NaN/Infinity, or uses a reserved key."""

    code = "record-invalid"
    default_hint = "Records must be JSON objects without NaN/Infinity or the keys seq/ts."


class HookEventInvalidError(InputError):
    """A client hook's event (JSON on stdin) cannot be read: too large, not strict JSON,
    not an object, or without a session id to name its run."""

    code = "hook-event-invalid"
    default_hint = (
        "agc hook reads the event JSON a client hook sends on stdin; the failure is kept "
        "for `agc hooks status` and the run is never complete."
    )


class SessionFileMissingError(InputError):
    """The client session file a hook event names (``transcript_path``) is gone when
    ``agc hook`` comes to seal it (a client that removed it, a session cycled away)."""

    code = "session-file-missing"
    default_hint = (
        "The run stays unsealed with every event a hook wrote; `agc recover RUN` seals it, "
        "and `agc import FILE` seals a copy of the session file when you have one."
    )


class SessionFileChangedError(AgcError):
    """A client session file no longer begins with the bytes earlier seals of its run
    took from it (it was edited, truncated or replaced where it had been sealed): the
    new lines are not sealed after a prefix that is not the sealed one."""

    code = "session-file-changed"
    exit_code = ExitCode.FINDINGS
    default_hint = (
        "`agc-verify RUN` reports it (transcript-diverges); `agc diff RUN FILE` shows where "
        "the file differs from what was sealed."
    )


class HookEventsUnheardError(AgcError):
    """Events a client sends to agc's HTTP listener may have been lost: a synchronous
    event of the session came when no listener had been up since the session's previous
    event (agc's resident capture process was not running, was restarted, or could not
    take its port), and the session was in a turn, when tool events fire."""

    code = "hook-events-unheard"
    exit_code = ExitCode.FINDINGS
    default_hint = (
        "`agc hooks status --client claude-code` says whether agc listens on the hooks' "
        "port; `agc-verify RUN` reports the run's capture as failed (never complete)."
    )


class HookPortTakenError(AgcError):
    """A program of another user (or one agc cannot name) held the port a session's
    HTTP hook events go to: Claude Code sent them, with the secret in their header, to
    that program. agc moved its hooks to a new port and secret for the sessions started
    after; the events of this session went elsewhere."""

    code = "hook-port-taken"
    exit_code = ExitCode.FINDINGS
    default_hint = (
        "Find who listens on the port (`ss -ltnp`); the session's tool events and their "
        "old secret went to that program. `agc hooks status --client claude-code` shows "
        "the port agc's hooks now use; `agc-verify RUN` reports the run's capture as "
        "failed (never complete)."
    )


class FileExistsRefusedError(UsageError):
    """agc refuses to overwrite an existing file (it never overwrites evidence)."""

    code = "file-exists"
    default_hint = "Choose another output path; agc never overwrites an existing file."


class InPlaceRefusedError(AgcError):
    """``--in-place`` will not replace a file another process holds open (a client still
    writing the session) or one that changed during the repair; the file is left as it
    was."""

    code = "in-place-refused"
    exit_code = ExitCode.UNREADABLE
    default_hint = "Quit the client that has the session open, then run the command again."


class UnsafePathError(UsageError):
    """A path is a symlink or otherwise unsafe to open."""

    code = "unsafe-path"
    default_hint = "agc does not follow symlinks inside a store; replace the link with the file."


class StoreError(AgcError):
    """The store or a file in it cannot be read or written (exit 3)."""

    code = "store-unreadable"
    exit_code = ExitCode.UNREADABLE
    default_hint = "Check that the store folder exists and that you may read and write it."


class FileUnreadableError(StoreError):
    """A file outside the store (an input, a key) exists but cannot be read (exit 3)."""

    code = "file-unreadable"
    default_hint = "Check the file's permissions and the disk it is on."


class FileWriteError(StoreError):
    """Writing a file failed for a reason of the machine: disk full, quota, read-only file
    system, I/O error, file-size limit (exit 3). The file is unchanged or absent, never
    half-written, so running the command again once the cause is gone works.

    Attributes:
        path: the file that could not be written.
        errno: the operating system's error number (``errno.ENOSPC`` …).
    """

    code = "file-write-failed"
    default_hint = "Free disk space and run the command again; nothing was half-written."

    def __init__(
        self, message: str, *, path: str, errno: int | None, hint: str | None = None
    ) -> None:
        super().__init__(message, hint=hint)
        self.path = path
        self.errno = errno


class SidecarInvalidError(InputError):
    """A checksum sidecar is not exactly ``<lower-case hex>  <file name>\\n``."""

    code = "sidecar-invalid"
    default_hint = "A sidecar holds one line: the lower-case hex digest, two spaces, the file name."


class ManifestInvalidError(InputError):
    """A run manifest is not valid JSON of the documented shape (docs/format.md)."""

    code = "manifest-invalid"
    default_hint = "The manifest was edited or damaged; compare it with docs/format.md."


class RunLockedError(StoreError):
    """Another writer (in this or another process) holds the file."""

    code = "run-locked"
    default_hint = "Only one writer per file: wait for the other writer to close it."


class ArtifactSealedError(StoreError):
    """The file is sealed (it has a sidecar or a closed manifest entry); never appended to."""

    code = "sealed"
    default_hint = "Sealed evidence is never appended to; write a new run id instead."


class TornTailError(StoreError):
    """The file's last line is unterminated (a crash mid-write); never appended to."""

    code = "torn-tail"
    default_hint = "Run `agc-verify` on the run to see the torn record before doing anything else."


class WriteFailedError(StoreError):
    """A write or fsync failed (disk full, file-size limit, I/O error).

    Attributes:
        records_written: how many records of this writer are complete on disk.
    """

    code = "write-failed"
    default_hint = "Free disk space or raise the file-size limit; complete records are intact."

    def __init__(self, message: str, *, records_written: int, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.records_written = records_written


class WriterClosedError(UsageError):
    """A write was attempted on a closed or failed writer."""

    code = "writer-closed"
    default_hint = "Open a new writer; a closed or failed writer accepts no more records."


class ReportInvalidError(AgcError):
    """A finding or report was built with an unknown code or severity (a bug, exit 4)."""

    code = "report-invalid"
    default_hint = "Report this as an agc bug; the evidence itself is untouched."


class SidecarMismatchError(AgcError):
    """An existing checksum sidecar does not match the file (exit 1)."""

    code = "sidecar-mismatch"
    exit_code = ExitCode.FINDINGS
    # Not `agc-verify`: it checks runs, and this file may be any file (`agc seal`), a
    # turn file or a projection record; the sidecar itself is the standard check.
    default_hint = (
        "The file or its sidecar changed after the seal; both are left as they are "
        "(`b3sum --check` or `sha256sum -c` on the sidecar, in its folder, re-checks it)."
    )


class VerificationError(AgcError):
    """Raised by ``verify_*`` functions when evidence is incomplete (exit 1).

    Attributes:
        report: the report whose findings caused the failure.
    """

    code = "incomplete"
    exit_code = ExitCode.FINDINGS
    default_hint = "Inspect the findings; `agc-verify RUN --json` lists them all."

    def __init__(self, message: str, *, report: object, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.report = report


class KeyInvalidError(UsageError):
    """A signing or trusted key file is missing, a folder, not a regular file (a FIFO, a
    device, a socket), too large or not an Ed25519 PEM key. One that exists but cannot
    be read is :class:`FileUnreadableError` (exit 3)."""

    code = "key-invalid"
    default_hint = "Create keys with `agc keys generate --out DIR` and pass the .pem files."


class UnsealedRunError(StoreError):
    """The file exists but was never sealed (a crash?); a writer does not continue it."""

    code = "unsealed"
    default_hint = (
        "Run `agc recover RUN_ID` to seal the crashed run, and record the new input under "
        "another run id."
    )


class RecoveryRefusedError(AgcError):
    """``agc recover`` found tampering (a prefix that does not match its checkpoint)."""

    code = "recovery-refused"
    exit_code = ExitCode.FINDINGS
    default_hint = "The run was modified after it was written; inspect it with agc-verify."


# --- resume: snapshots and tool-call histories -------------------------------


class SnapshotNotFoundError(InputError):
    """No session snapshot exists for the run id (or the named file does not exist)."""

    code = "snapshot-not-found"
    default_hint = "Check the run id and --store; snapshots live in <store>/sessions/."


class SnapshotInvalidError(InputError):
    """A snapshot's bytes verified but are not a snapshot of the documented shape."""

    code = "snapshot-invalid"
    default_hint = "The snapshot does not follow docs/resume.md; it cannot be resumed."


class SnapshotUnsealedError(SidecarMismatchError):
    """A snapshot has no checksum sidecar: never sealed, or a save was interrupted (exit 1)."""

    code = "snapshot-unsealed"
    default_hint = (
        "Save the snapshot again; --insecure-skip-verify reads it without checking its seal."
    )


class SnapshotTamperedError(SidecarMismatchError):
    """A snapshot's bytes do not match its sidecar: tampered with or truncated (exit 1)."""

    code = "snapshot-tampered"
    default_hint = (
        "Do not resume from it; --insecure-skip-verify reads it without checking its seal."
    )


# --- signatures of files other than run manifests (resume snapshots) --------


class UnsignedError(AgcError):
    """A file that must be signed is not (exit 1): a signature is required because a
    trusted key was given (or ``require_signature``), and no ``--allow-unsigned`` relaxes
    it. The code is the one ``agc-verify`` reports for an unsigned run."""

    code = "unsigned"
    exit_code = ExitCode.FINDINGS
    default_hint = (
        "Save it again with a signing key (--signing-key, $AGC_SIGNING_KEY or "
        "signing_key=); --allow-unsigned accepts unsigned files while checking signed ones."
    )


class BadSignatureError(AgcError):
    """A signature is malformed, does not verify (RFC 8032 Ed25519), or is a valid
    signature over other bytes or another file (exit 1)."""

    code = "bad-signature"
    exit_code = ExitCode.FINDINGS
    default_hint = (
        "Do not use the file: it, its sidecar or its signature was changed after it was "
        "signed (--insecure-skip-verify reads it without any check)."
    )


class UnknownKeyError(AgcError):
    """A file is signed by a key that is not trusted, or a signature is required and no
    trusted key was given to check it (exit 1)."""

    code = "unknown-key"
    exit_code = ExitCode.FINDINGS
    default_hint = (
        "Trust the signer's public key (--trusted-key FILE, $AGC_TRUSTED_KEYS), if it is "
        "yours; otherwise do not use the file."
    )


class HistoryFormatError(InputError):
    """A history is not in the named format, or its format cannot be detected (exit 2)."""

    code = "history-format"
    default_hint = (
        "Name the format with --format: openai-chat, anthropic, openai-responses, "
        "codex-rollout, claude-code or gemini-chat."
    )


class HistoryEmptyError(HistoryFormatError):
    """A history holds no message to check or repair: an empty array, a file with no
    message line, or a file of another kind read with ``--format`` (exit 2)."""

    code = "history-empty"
    default_hint = (
        "Give the session file or JSON array the agent saved (without --format, agc tells "
        "the format); a run recorded with agc record/import is resumed by its run id."
    )


class HistoryInvalidError(VerificationError):
    """Raised by ``verify_history`` when a provider would reject the history (exit 1)."""

    code = "history-invalid"
    default_hint = "Run `agc resume FILE` to see each broken rule and the repair."


class RepairIncompleteError(VerificationError):
    """A repaired history still breaks a provider rule (exit 1); nothing was written."""

    code = "repair-incomplete"
    default_hint = "Report this history (without secrets) as an agc bug; the input is untouched."


class TurnIdInvalidError(UsageError):
    """A ``clientTurnId`` breaks the turn-id rule (after trimming: 6-160 ASCII letters,
    digits or ``-``, the first a letter or digit)."""

    code = "turn-id-invalid"
    default_hint = "Use 6-160 characters from A-Z a-z 0-9 -, starting with a letter or digit."


class PolicyInvalidError(InputError):
    """A ledger policy file (TOML) is not valid TOML or not of the documented shape."""

    code = "policy-invalid"
    default_hint = "Compare the policy file with the built-in one in docs/ledger.md."


class LedgerInvalidError(InputError):
    """A file given as a turn ledger holds no turn (no ``turn_start`` record)."""

    code = "ledger-invalid"
    default_hint = "Name a turn file: .agent/runtime/direct-codex/turns/<clientTurnId>.jsonl."


class AgentDbError(StoreError):
    """The project's ``.agent/agent.db`` cannot be used (foreign schema, record too large,
    SQLite error)."""

    code = "agent-db-unusable"
    default_hint = "Check .agent/agent.db: it must be an agc record database you may write."


# --- extensions: imported Skills, MCP servers and plugins -------------------------------


class ArchiveRefusedError(InputError):
    """An archive or folder offered for import is unsafe or too large; nothing was kept."""

    code = "archive-refused"
    default_hint = (
        "agc refuses archives with unsafe entries (.., absolute paths, links, collisions) "
        "and archives past the size limits; repack it without them."
    )


class ExtensionValueError(InputError, ValueError):
    """A file of a source offered for import holds a number agc cannot keep exactly
    (a frontmatter integer of too many digits, an MCP timeout past 2^53); nothing was
    kept. Also a ``ValueError``: a reader of a stored copy treats it as a bad value."""

    code = "extension-value-refused"
    default_hint = (
        "Write the number within the limit or remove it (a frontmatter field may hold "
        "it as a quoted string), then import again."
    )


class ExtensionUnrecognisedError(InputError):
    """A source offered for import holds no Skill, MCP server or plugin agc recognises.
    It is kept as one disabled ``unknown`` item (never run, never projected), and the
    import says so as an error."""

    code = "extension-unrecognised"
    default_hint = (
        "agc ext imports a SKILL.md, an MCP configuration (.mcp.json, mcp.json, a "
        "config.toml with [mcp_servers]), or a folder, zip or plugin holding them."
    )


class ExtensionNotFoundError(UsageError):
    """No extension item (or more than one) matches the id or name given."""

    code = "extension-not-found"
    default_hint = "Run `agc ext list` to see the ids and names of the imported items."


class ExtensionNameInvalidError(UsageError):
    """A new name for an item is empty or not in the native form of its kind."""

    code = "extension-name-invalid"
    default_hint = (
        "Skills: lower-case letters, digits and single hyphens, at most 64 characters; "
        "MCP servers: letters, digits, '_' and '-'."
    )


class ExtensionIndexInvalidError(StoreError):
    """The extension index (``<store>/extensions/index.json``) is damaged or foreign."""

    code = "extension-index-invalid"
    default_hint = (
        "Compare <store>/extensions/index.json with docs/extensions.md; agc never rewrites "
        "an index it cannot read."
    )


class ProjectionRefusedError(UsageError):
    """A projection target (Codex home, skill root) is not one agc may rebuild."""

    code = "projection-refused"
    default_hint = (
        "Point --codex-home at an empty folder or one agc projected before; agc never "
        "deletes a folder it did not make."
    )


# --- readiness: the gate for an agent chat endpoint (docs/readiness.md) ------------------


class ObservationInvalidError(InputError):
    """A readiness observation is not JSON of the documented shape (exit 2)."""

    code = "observation-invalid"
    default_hint = "Compare the observation with the format in docs/readiness.md."


class ReadinessConfigError(InputError):
    """A readiness configuration file (TOML or JSON) is unreadable or of the wrong shape."""

    code = "readiness-config-invalid"
    default_hint = "Compare the configuration file with the example in docs/readiness.md."


class DeploymentManifestError(InputError):
    """A deployment manifest is not YAML, or not Kubernetes objects (exit 2)."""

    code = "deployment-manifest-invalid"
    default_hint = "Give Kubernetes YAML files (Deployment, StatefulSet, Pod …), as kubectl takes."


class ClientConfigInvalidError(InputError):
    """An agent client's own configuration file (Claude Code or Gemini CLI
    ``settings.json``, Codex ``config.toml``) cannot be read as the client's format, or its
    ``hooks`` are not shaped as the client documents them: agc writes nothing to it (exit 2).
    """

    code = "client-config-invalid"
    default_hint = (
        "Fix the file (the client's own settings) or move it away, then run the command "
        "again; agc changes only a file it can read exactly."
    )


class UrlInvalidError(UsageError):
    """A URL given to the readiness probe cannot be probed as given (exit 2)."""

    code = "url-invalid"
    default_hint = "Give the service's base URL, e.g. https://dev.example.com:16666/"
