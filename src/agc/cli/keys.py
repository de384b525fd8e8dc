"""``agc keys generate`` and ``agc recover``: signing keys and crash recovery."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from agc.cli.common import EPILOG, StoreOption, emit_json, err_console, new_app, out_console
from agc.exitcodes import ExitCode
from agc.flows import (
    RunId,
    counted,
    import_recorded_session_file,
    recover_session_run,
    session_file_hint,
)
from agc.integrity import (
    SigningKey,
    generate_keypair,
    load_signing_key,
    recover_store,
)

__all__ = ["register", "signing_key_from"]

SigningKeyOption = Annotated[
    Path | None,
    typer.Option(
        "--signing-key",
        help="Ed25519 private key (PEM) to sign the run manifest; also $AGC_SIGNING_KEY.",
        show_default=False,
    ),
]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout.")]

keys_app = new_app(name="keys", help_text="Manage Ed25519 signing keys for run manifests.")


def signing_key_from(option: Path | None) -> SigningKey | None:
    """The signing key named by ``--signing-key`` or ``$AGC_SIGNING_KEY``, if any."""
    path = option or (
        Path(os.environ["AGC_SIGNING_KEY"]) if os.environ.get("AGC_SIGNING_KEY") else None
    )
    return load_signing_key(path) if path is not None else None


@keys_app.command("generate", epilog=EPILOG)
def generate_command(
    out: Annotated[Path, typer.Option("--out", help="Folder for the key pair.")],
    as_json: JsonOption = False,
) -> int:
    """Create DIR/signing-key.pem (mode 0600) and DIR/signing-key.pub.pem.

    Both are written in full before either takes its name: a full or read-only disk
    leaves no key at all (exit 3), and the same command works once there is space.
    Existing keys are never overwritten. DIR can then be given to agc-verify
    --trusted-key (or $AGC_TRUSTED_KEYS): its private key is skipped.

    \b
    Examples:
      agc keys generate --out ~/.config/agc/keys
      AGC_SIGNING_KEY=~/.config/agc/keys/signing-key.pem agc record --run-id r1 < run.jsonl
      agc-verify r1 --trusted-key ~/.config/agc/keys/signing-key.pub.pem --require-signature
      AGC_TRUSTED_KEYS=~/.config/agc/keys agc-verify --all
    """
    private, public, key_id = generate_keypair(out)
    if as_json:
        emit_json({"private_key": str(private), "public_key": str(public), "key_id": key_id})
    else:
        out_console.print(f"private key: {private} (mode 0600)", markup=False)
        out_console.print(f"public key:  {public}", markup=False)
        out_console.print(f"key id:      {key_id}", markup=False)
    return int(ExitCode.OK)


def recover_command(
    run_id: Annotated[
        str | None,
        typer.Argument(
            help="The crashed run to seal; without it, only the store-level state is repaired.",
            show_default=False,
        ),
    ] = None,
    store: StoreOption = None,
    signing_key: SigningKeyOption = None,
    as_json: JsonOption = False,
) -> int:
    """Seal a run that crashed before close(), without losing a byte.

    Verifies each unsealed file against its crash checkpoints (refuses, exit 1, on a
    mismatch), moves a torn last line into FILE.quarantine, seals, and marks the
    manifest `recovered: true`. Recovering a sealed run changes nothing. It also heals
    the store: completes a chain link a crash interrupted, rewrites a stale chain head,
    quarantines a torn chain line and removes temporary files a killed writer left.
    Without RUN_ID only the store is healed.

    \b
    Examples:
      agc recover fix-tests-42
      agc recover fix-tests-42 --store ./evidence --json
      agc recover --store ./evidence          # store-level state only
      agc recover fix-tests-42 --store s3://evidence/team   # seal and upload a staged run
    """
    key = signing_key_from(signing_key)
    if run_id is None:
        # Each line is printed where the store's repair reports it: a folder's chain and
        # temporary files, the runs staged for a store written object by object.
        healed = recover_store(store, signing_key=key)
        if as_json:
            emit_json(healed.to_dict())
            return int(ExitCode.OK)
        if healed.linked:
            out_console.print(f"chain: completed the interrupted link of run {healed.linked}")
        if healed.head_repaired:
            out_console.print("chain: rewrote the chain head from the last link")
        if healed.newline_added:
            out_console.print("chain: added the missing newline after the last link")
        if healed.quarantined_bytes:
            out_console.print(
                f"chain: moved a torn last line ({counted(healed.quarantined_bytes, 'byte')}) to "
                "audit/chain.jsonl.quarantine",
                markup=False,
            )
        for name in healed.removed_temp_files:
            out_console.print(f"removed leftover temporary file {name}", markup=False)
        for staged in healed.uploaded:
            out_console.print(f"uploaded staged run {staged}", markup=False)
        for failed, why in healed.failed:
            out_console.print(f"not uploaded: {failed}: {why}", markup=False)
        verdict = "healed" if healed.changed else "nothing to repair"
        out_console.print(f"store {healed.store}: {verdict}", markup=False)
        return int(ExitCode.FINDINGS if healed.failed else ExitCode.OK)
    report = recover_session_run(RunId(run_id), store, signing_key=key)
    # A run sealed in place also heals its store (the chain, a killed writer's temporary
    # files); one uploaded from its staging leaves the other staged runs to
    # `agc recover --store`, which uploads them.
    was_uploaded = report.object_store is not None
    repaired = None if was_uploaded else recover_store(store)
    transcript = next((a.records for a in report.artifacts if a.kind == "transcript"), None)
    # A session its hooks captured, stopped before a turn's end sealed its session file:
    # the file they named is sealed now, as that turn's end would have.
    imported = None
    if not was_uploaded and (report.changed or transcript == 0):
        imported = import_recorded_session_file(run_id, store, signing_key=key)
    if imported is not None and imported.status in {"imported", "appended"}:
        transcript = (transcript or 0) + imported.records
    if as_json:
        document = report.to_dict()
        if repaired is not None:
            document["store"] = repaired.to_dict()
        document["session_file"] = None if imported is None else imported.to_dict()
        emit_json(document)
        return int(ExitCode.OK)
    for artifact in report.artifacts:
        line = (
            f"{artifact.kind:<12} {artifact.action}: {counted(artifact.records, 'record')}, "
            f"{counted(artifact.bytes, 'byte')}"
        )
        if not was_uploaded:
            line += f" ({artifact.verified_bytes} verified by checkpoints)"
            if artifact.quarantine:
                line += f"; {artifact.quarantined_bytes} torn bytes moved to {artifact.quarantine}"
        out_console.print(line, markup=False)
    if was_uploaded:
        from agc.cli.write_policy import print_upload  # noqa: PLC0415 - an uploaded run only

        print_upload(report.object_store)
    elif report.chain != "already-linked":
        out_console.print(f"chain: {report.chain}", markup=False)
    for name in repaired.removed_temp_files if repaired is not None else ():
        out_console.print(f"removed leftover temporary file {name}", markup=False)
    if was_uploaded:
        verdict = "sealed and uploaded"
    elif all(a.action == "removed-empty" for a in report.artifacts):
        verdict = "killed before its first record; its empty files were removed"
    elif report.changed or (repaired is not None and repaired.changed):
        verdict = "recovered and sealed"
    else:
        verdict = "already sealed; nothing changed"
    if imported is not None:
        said = {
            "imported": f"{counted(imported.records, 'record')} added",
            "appended": f"{counted(imported.records, 'record')} added as a new segment",
            "unchanged": "nothing new",
            "diverges": f"not added: it changed where the run had sealed it (line "
            f"{imported.line}; agc-verify reports transcript-diverges)",
            "failed": "not added: "
            + (imported.error.message if imported.error is not None else "it failed"),
            "refused": "not used: "
            + (imported.error.message if imported.error is not None else "a check failed"),
        }.get(imported.status, imported.status)
        out_console.print(f"{'transcript':<12} session file {imported.path}: {said}", markup=False)
    hint = None
    if transcript is not None and not was_uploaded:
        # The verdict says the transcript is empty and the run not complete: the hint
        # gives the next step alone, not the same words again.
        hint = session_file_hint(run_id, store, transcript_records=transcript, explain=False)
    if hint is not None:
        verdict += ", with an empty transcript (not complete)"
    out_console.print(f"run {run_id}: {verdict}", markup=False)
    if hint is not None:
        err_console.print(f"hint: {hint}", markup=False)
    return int(ExitCode.OK)


def register(app: typer.Typer) -> None:
    """Add ``keys`` and ``recover`` to the ``agc`` app."""
    app.add_typer(keys_app)
    app.command(name="recover", epilog=EPILOG)(recover_command)
