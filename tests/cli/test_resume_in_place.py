"""``agc resume FILE --in-place``: the repair replaces the session file where its client
reads it, the original kept beside it, and never while a client holds it or when it
changed; and the next step (where the client reads it, how to resume it) is printed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agc.resume
from agc.cli.app import main
from agc.resume import repair_loaded, repair_streamed

GOLDEN = Path(__file__).resolve().parents[1] / "resume" / "golden"
CASES = ("claude-code-in-flight", "codex-rollout-in-flight")


@pytest.fixture(autouse=True)
def _no_client_homes(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("CODEX_HOME", raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)


def _session(tmp_path: Path, case: str) -> tuple[Path, bytes]:
    path = tmp_path / f"{case}.jsonl"
    data = (GOLDEN / f"{case}.jsonl").read_bytes()
    path.write_bytes(data)
    return path, data


def _backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(f"{path.name}.agc-backup-*"))


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("strategy", ["strip", "synthesize"])
def test_in_place_replaces_the_file_with_its_repair_and_keeps_the_original(
    tmp_path: Path, case: str, strategy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, original = _session(tmp_path, case)
    assert main(["resume", str(path), "--in-place", "--strategy", strategy]) == 0
    err = capsys.readouterr().err
    (backup,) = _backups(path)
    assert backup.read_bytes() == original
    assert path.read_bytes() == (GOLDEN / f"{case}.{strategy}.jsonl").read_bytes()
    assert main(["resume", str(path), "--check"]) == 0
    assert f"the original is kept at {backup}" in err
    # the Codex rollout names its start and id; the Claude Code sample names no working
    # directory and no Claude home holds it, so no path can be given for it: said so
    resume = {
        "codex-rollout-in-flight": "resume with: codex resume sess",
        "claude-code-in-flight": "next: no resume step: no file of session ",
    }[case]
    assert resume in err
    # a second repair finds nothing to do and leaves the file and the backups alone
    assert main(["resume", str(path), "--in-place", "--strategy", strategy]) == 0
    assert _backups(path) == [backup]
    assert "nothing to repair" in capsys.readouterr().err


def test_the_repaired_file_keeps_its_mode(tmp_path: Path) -> None:
    path, _ = _session(tmp_path, "codex-rollout-in-flight")
    for mode in (0o644, 0o640, 0o600):
        path.chmod(mode)
        path.write_bytes((GOLDEN / "codex-rollout-in-flight.jsonl").read_bytes())
        assert main(["resume", str(path), "--in-place"]) == 0
        assert path.stat().st_mode & 0o777 == mode


def test_backups_never_overwrite_each_other(tmp_path: Path) -> None:
    path, original = _session(tmp_path, "codex-rollout-in-flight")
    for _ in range(3):
        path.write_bytes(original)
        assert main(["resume", str(path), "--in-place"]) == 0
    backups = _backups(path)
    assert len(backups) == 3
    assert all(b.read_bytes() == original for b in backups)


def test_in_place_is_refused_while_another_process_holds_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, original = _session(tmp_path, "claude-code-in-flight")
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; f = open(sys.argv[1]); print('open', flush=True); sys.stdin.read()",
            str(path),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline() == "open\n"
        assert main(["resume", str(path), "--in-place"]) == 3
        err = capsys.readouterr().err
        assert f"open in process {holder.pid}" in err
        assert path.read_bytes() == original
        assert _backups(path) == []
        assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary left
    finally:
        holder.communicate("")
    assert main(["resume", str(path), "--in-place"]) == 0


@pytest.mark.parametrize("case", CASES)
def test_in_place_is_refused_when_the_file_changes_during_the_repair(
    tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    path, original = _session(tmp_path, case)
    grown = original + b'{"type":"late"}\n'
    real_loaded, real_streamed = repair_loaded, repair_streamed

    def loaded(*args: object, **kwargs: object) -> object:
        path.write_bytes(grown)  # the client writes on while agc repairs
        return real_loaded(*args, **kwargs)  # type: ignore[arg-type]

    def streamed(*args: object, **kwargs: object) -> object:
        with path.open("ab") as handle:
            handle.write(b'{"type":"late"}\n')
        return real_streamed(*args, **kwargs)  # type: ignore[arg-type]

    # the command calls the repair through the agc.resume front door
    monkeypatch.setattr(agc.resume, "repair_loaded", loaded)
    monkeypatch.setattr(agc.resume, "repair_streamed", streamed)
    # refused as a file another process holds open is: exit 3, in-place-refused
    assert main(["resume", str(path), "--in-place", "--json"]) == 3
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "in-place-refused"
    assert f"{path} changed while agc" in error["message"]
    assert path.read_bytes() == grown  # nothing the client wrote is lost
    assert _backups(path) == []
    assert [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_failed_swap_leaves_the_original_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, original = _session(tmp_path, "codex-rollout-in-flight")

    def no_rename(*_args: object, **_kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", no_rename)
    assert main(["resume", str(path), "--in-place"]) == 3
    assert path.read_bytes() == original
    assert all(b.read_bytes() == original for b in _backups(path))
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--check"], "--check only validates"),
        (["--out", "x.jsonl"], "give one"),
    ],
)
def test_in_place_with_another_output_is_a_usage_error(
    tmp_path: Path, extra: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path, original = _session(tmp_path, "codex-rollout-in-flight")
    assert main(["resume", str(path), "--in-place", *extra]) == 2
    assert says in capsys.readouterr().err
    assert path.read_bytes() == original


def test_in_place_on_a_run_id_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["resume", "some-run", "--store", str(tmp_path), "--in-place"]) == 2
    assert "evidence agc never changes" in capsys.readouterr().err


def test_a_repair_to_out_says_where_the_client_reads_it_and_how_to_resume(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    home = claude / "projects" / "-w" / "s1.jsonl"
    home.parent.mkdir(parents=True)
    source, _ = _session(tmp_path, "claude-code-in-flight")
    home.write_bytes(source.read_bytes())
    out = tmp_path / "fixed.jsonl"
    assert main(["resume", str(source), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"next: Claude Code reads session s1 from {home}" in err
    assert (
        f"next: Claude Code reads session s1 from {home}. To put the repair there, moving "
        f"the session before it aside to {home}.before-repair, run: mv -- {home} "
        f"{home}.before-repair && cp -- {out} {home}"
    ) in err
    assert "resume with: claude --resume s1" in err
    # repaired where the client reads it: in place, and the next step is the command
    assert main(["resume", str(home), "--in-place", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["next_step"]["path"] == str(home)
    assert report["backup"] == str(_backups(home)[0])
    assert report["in_place"] is True


def test_a_repair_written_nowhere_gives_no_resume_command_as_text_or_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Resumed as it is, the client's file would be sent as broken as it is.
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    home = claude / "projects" / "-w" / "s1.jsonl"
    home.parent.mkdir(parents=True)
    source, _ = _session(tmp_path, "claude-code-in-flight")
    home.write_bytes(source.read_bytes())
    assert main(["resume", str(home), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["next_step"] is None
    assert report["no_next_step"].startswith("nothing written: ")
    assert main(["resume", str(home)]) == 1
    err = capsys.readouterr().err
    assert "claude --resume" not in err
    assert "next:" not in err
    assert "nothing written: give --out FILE" in err


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("option", ["--in-place", "--out"])
def test_a_same_size_edit_with_its_mtime_set_back_is_still_seen(
    tmp_path: Path, case: str, option: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit in place that keeps the size and sets the modification time back (as
    `touch -d` or os.utime can) still changes the file's change time: refused."""
    path, _ = _session(tmp_path, case)
    real_loaded, real_streamed = repair_loaded, repair_streamed

    def edit() -> None:
        before = os.stat(path)
        data = bytearray(path.read_bytes())
        at = data.index(b'"')
        data[at + 1 : at + 2] = b"Z" if data[at + 1 : at + 2] != b"Z" else b"Y"
        with path.open("r+b") as handle:  # in place: the same inode, the same size
            handle.write(bytes(data))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))

    def loaded(*args: object, **kwargs: object) -> object:
        edit()
        return real_loaded(*args, **kwargs)  # type: ignore[arg-type]

    def streamed(*args: object, **kwargs: object) -> object:
        edit()
        return real_streamed(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(agc.resume, "repair_loaded", loaded)
    monkeypatch.setattr(agc.resume, "repair_streamed", streamed)
    target = [option] if option == "--in-place" else [option, str(tmp_path / "out.jsonl")]
    # --in-place refuses as for a file held open (3); --out read a changed input (2)
    assert main(["resume", str(path), *target]) == (3 if option == "--in-place" else 2)
    assert _backups(path) == []
    assert not (tmp_path / "out.jsonl").exists()


@pytest.mark.parametrize("recorded_here", [False, True])
def test_a_session_from_another_machine_gets_a_step_that_creates_the_folders(
    tmp_path: Path,
    recorded_here: bool,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No projects folder of the session's directory and no such directory here: the copy
    creates the client's folder first, and the missing working directory is said."""
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    cwd = tmp_path / "projects" / "spotter"
    if recorded_here:
        cwd.mkdir(parents=True)
    lines = (GOLDEN / "claude-code-in-flight.jsonl").read_text().splitlines()
    first = json.loads(lines[1])
    first["cwd"] = str(cwd)
    source = tmp_path / "broken.jsonl"
    source.write_text("\n".join([lines[0], json.dumps(first), *lines[2:]]) + "\n")
    out = tmp_path / "fixed.jsonl"
    assert main(["resume", str(source), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    home = claude / "projects" / str(cwd).replace("/", "-").replace("_", "-") / "s1.jsonl"
    assert f"run: mkdir -p -- {home.parent} && cp -- {out} {home}" in err
    assert f"resume with: cd {cwd} && claude --resume s1" in err
    missing = f"note: the session ran in {cwd}, which does not exist on this machine"
    assert (missing in err) is not recorded_here
    if not recorded_here:
        assert f"create it first (mkdir -p -- {cwd})" in err
    # the step works as said: the folder made, the copy lands where the client reads it
    home.parent.mkdir(parents=True)
    assert main(["resume", str(source), "--out", str(tmp_path / "again.jsonl")]) == 0
    assert f"run: cp -- {tmp_path / 'again.jsonl'} {home}" in capsys.readouterr().err


def test_a_run_recorded_on_another_machine_gets_the_same_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`agc resume RUN --out R` of an imported session file: the step is the file's."""
    claude = tmp_path / "claude"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(claude))
    cwd = tmp_path / "elsewhere" / "spotter"
    lines = (GOLDEN / "claude-code-in-flight.jsonl").read_text().splitlines()
    first = json.loads(lines[1])
    first["cwd"] = str(cwd)
    source = tmp_path / "broken.jsonl"
    source.write_text("\n".join([lines[0], json.dumps(first), *lines[2:]]) + "\n")
    store = tmp_path / "store"
    assert main(["import", str(source), "--run-id", "r1", "--store", str(store)]) == 0
    out = tmp_path / "fixed.jsonl"
    capsys.readouterr()
    assert main(["resume", "r1", "--store", str(store), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    home = claude / "projects" / str(cwd).replace("/", "-").replace("_", "-") / "s1.jsonl"
    assert f"run: mkdir -p -- {home.parent} && cp -- {out} {home}" in err
    assert f"note: the session ran in {cwd}, which does not exist on this machine" in err


def _immutable(path: Path) -> bool:
    """Whether ``chattr +i`` made ``path`` immutable (root on a file system that has the
    attribute); the caller undoes it."""
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, check=False)
    return done.returncode == 0


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("how", ["rename refused", "immutable file"])
def test_a_file_that_refuses_its_replacement_is_unchanged_named_and_leaves_no_backup(
    tmp_path: Path,
    case: str,
    how: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The last step of --in-place, the rename over the file, is refused: the file is
    # as it was, so a backup of it would be a copy of nothing replaced.
    path, original = _session(tmp_path, case)
    if how == "immutable file":
        if not _immutable(path):
            pytest.skip("chattr +i is not available here (needs root and a file system with it)")
    else:

        def refuse(*args: object, **kwargs: object) -> None:
            raise PermissionError(1, "Operation not permitted")

        monkeypatch.setattr(os, "replace", refuse)
    try:
        assert main(["resume", str(path), "--in-place", "--json"]) == 3
    finally:
        subprocess.run(["chattr", "-i", str(path)], capture_output=True, check=False)
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["code"] == "file-write-failed"
    assert error["message"].startswith(f"--in-place: {path} cannot be replaced by its repair")
    assert "it is unchanged" in error["message"]
    assert path.read_bytes() == original
    assert _backups(path) == []
