"""The repository: sources kept byte for byte, the index under a lock, crash and disk-full
behaviour, a damaged index never half-used."""

from __future__ import annotations

import errno
import fcntl
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agc.errors import (
    ArchiveRefusedError,
    ExtensionIndexInvalidError,
    ExtensionNameInvalidError,
    ExtensionNotFoundError,
    StoreError,
    UsageError,
)
from agc.extensions import ExtensionRepository, ImportLimits
from tests.extensions.builders import (
    plugin_with_two_skills_and_mcp,
    tree_bytes,
    write_skill,
    zip_folder,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO_ROOT / "src"), *sys.path])}


def test_a_folder_is_kept_byte_for_byte_and_read_only(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    result = repo.import_path(plugin)
    stored = repo.tree_dir(result.source)
    assert tree_bytes(stored) == tree_bytes(plugin)
    assert all(not path.stat().st_mode & 0o222 for path in stored.rglob("*") if path.is_file())
    assert result.source.storage_path == f"sources/{result.source.id}"


def test_a_zip_is_kept_as_imported(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path / "src")
    archive = zip_folder(plugin, tmp_path / "p.zip")
    repo = ExtensionRepository(store)
    result = repo.import_path(archive)
    assert (repo.source_dir(result.source) / "archive.zip").read_bytes() == archive.read_bytes()
    assert tree_bytes(repo.tree_dir(result.source)) == tree_bytes(plugin)


def test_importing_again_adds_a_new_source_and_keeps_the_old_items(
    tmp_path: Path, store: Path
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    first = repo.import_path(plugin)
    second = repo.import_path(plugin)
    assert first.source.id != second.source.id
    assert [item.name for item in repo.items()] == [
        "art-skill",
        "code-skill",
        "search",
        "art-skill-2",
        "code-skill-2",
        "search-2",
    ]
    assert second.duplicate
    assert second.renamed
    assert repo.load().items[:3] == first.items


def test_same_name_other_content_is_renamed_but_not_a_duplicate(
    tmp_path: Path, store: Path
) -> None:
    write_skill(tmp_path / "a" / "art", "art", description="one")
    write_skill(tmp_path / "b" / "art", "art", description="two")
    repo = ExtensionRepository(store)
    repo.import_path(tmp_path / "a")
    second = repo.import_path(tmp_path / "b")
    assert (second.items[0].name, second.renamed, second.duplicate) == ("art-2", True, False)


def test_rename_keeps_the_original_name_and_suffixes_a_taken_one(
    tmp_path: Path, store: Path
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    art, code, _ = repo.import_path(plugin).items
    result = repo.rename(art.id, "code-skill")
    assert (result.item.name, result.item.original_name, result.suffixed) == (
        "code-skill-2",
        "art-skill",
        True,
    )
    assert result.notice is not None
    assert "code-skill-2" in result.notice
    again = repo.rename(art.id, "code-skill-2")
    assert (again.item.name, again.suffixed, again.notice) == ("code-skill-2", False, None)
    assert repo.load().items[1].name == code.name


def test_a_skill_may_share_its_name_with_an_mcp_server(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    art = repo.import_path(plugin).items[0]
    assert repo.rename(art.id, "search").item.name == "search"


def test_rename_refuses_an_invalid_name_and_changes_nothing(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    art = repo.import_path(plugin).items[0]
    before = repo.index_path.read_bytes()
    with pytest.raises(ExtensionNameInvalidError):
        repo.rename(art.id, "Not  Valid")
    assert repo.index_path.read_bytes() == before


def test_an_unknown_item_cannot_be_enabled(tmp_path: Path, store: Path) -> None:
    blob = tmp_path / "tool.bin"
    blob.write_bytes(b"\x00\x01")
    repo = ExtensionRepository(store)
    item = repo.import_path(blob).items[0]
    with pytest.raises(UsageError, match="cannot be enabled"):
        repo.set_enabled([item.id], True)
    assert not repo.load().items[0].enabled


def test_items_are_found_by_id_prefix_or_unique_name(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    items = repo.import_path(plugin).items
    index = repo.load()
    assert repo.resolve(index, items[0].id).id == items[0].id
    assert repo.resolve(index, items[1].id[len("extension-") :][:8]).id == items[1].id
    assert repo.resolve(index, "search").id == items[2].id
    with pytest.raises(ExtensionNotFoundError):
        repo.resolve(index, "nothing-like-it")
    repo.import_path(plugin)
    repo.rename(repo.load().items[3].id, "search")  # a skill named like the server
    with pytest.raises(ExtensionNotFoundError, match="matches 2 items"):
        repo.resolve(repo.load(), "search")


def test_removing_one_item_keeps_the_others_and_the_source(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    result = repo.import_path(plugin)
    removed = repo.remove([result.items[0].id])
    assert [item.name for item in removed.items] == ["art-skill"]
    assert removed.sources == ()
    assert [item.name for item in repo.items()] == ["code-skill", "search"]
    assert repo.source_dir(result.source).is_dir()


def test_removing_the_last_item_deletes_its_source(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    keep = repo.import_path(plugin)
    gone = repo.import_path(plugin)
    removed = repo.remove([item.id for item in gone.items])
    assert removed.sources == (gone.source,)
    assert not repo.source_dir(gone.source).exists()
    assert repo.source_dir(keep.source).is_dir()
    assert [source.id for source in repo.load().sources] == [keep.source.id]


def test_an_unknown_reference_changes_nothing(tmp_path: Path, store: Path) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    item = repo.import_path(plugin).items[0]
    before = repo.index_path.read_bytes()
    with pytest.raises(ExtensionNotFoundError):
        repo.remove([item.id, "extension-ffffffffffffffff"])
    with pytest.raises(ExtensionNotFoundError):
        repo.set_enabled([item.id, "nope"], False)
    assert repo.index_path.read_bytes() == before


# -- a damaged or edited index -------------------------------------------------------------


def _edit_index(repo: ExtensionRepository, change: object) -> None:
    document = json.loads(repo.index_path.read_text())
    change(document)  # type: ignore[operator]
    os.chmod(repo.index_path, 0o644)
    repo.index_path.write_text(json.dumps(document))


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda d: d.update(schemaVersion=2), "schemaVersion 2"),
        (lambda d: d["sources"][0].update(storagePath="../../../home"), "storagePath"),
        (lambda d: d["sources"][0].update(id="source-../../x"), "id"),
        (lambda d: d["items"][0].update(skillDir="../../outside"), "skillDir"),
        (lambda d: d["items"][0].update(sourceRelativePath="/etc/passwd"), "sourceRelativePath"),
        (lambda d: d["items"][2]["mcp"].update(configDir="a/../../b"), "configDir"),
        (lambda d: d["items"][0].update(enabled="yes"), "enabled"),
        (lambda d: d["items"][0].update(sourceId="source-0000000000000000"), "names no source"),
        (lambda d: d["items"].append(d["items"][0]), "one id twice"),
        (lambda d: d["items"][0].update(type="plugin"), "type"),
    ],
)
def test_a_damaged_index_is_refused_and_never_rewritten(
    tmp_path: Path, store: Path, change: object, problem: str
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    repo.import_path(plugin)
    _edit_index(repo, change)
    before = repo.index_path.read_bytes()
    with pytest.raises(ExtensionIndexInvalidError, match=problem):
        repo.load()
    with pytest.raises(ExtensionIndexInvalidError):
        repo.import_path(plugin)
    with pytest.raises(ExtensionIndexInvalidError):
        repo.remove(["art-skill"])
    assert repo.index_path.read_bytes() == before
    assert len(os.listdir(repo.sources_dir)) == 1


def test_an_index_that_is_not_json_is_a_store_error(store: Path) -> None:
    repo = ExtensionRepository(store)
    repo.root.mkdir(parents=True)
    repo.index_path.write_bytes(b"{ half")
    with pytest.raises(ExtensionIndexInvalidError, match="not valid JSON") as caught:
        repo.load()
    assert caught.value.exit_code == 3


@pytest.mark.parametrize("depth", [100, 200_000])
def test_a_deeply_nested_index_is_a_store_error_not_a_crash(store: Path, depth: int) -> None:
    repo = ExtensionRepository(store)
    repo.root.mkdir(parents=True)
    deep = b"[" * depth + b"]" * depth
    repo.index_path.write_bytes(b'{"schemaVersion": 1, "sources": [], "x": ' + deep + b"}")
    with pytest.raises(ExtensionIndexInvalidError, match="deeper than") as caught:
        repo.load()
    assert caught.value.exit_code == 3


# -- crashes, full disks, concurrent writers ---------------------------------------------


def test_a_full_disk_while_committing_keeps_nothing_and_exits_3(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    repo.import_path(plugin)
    before = repo.index_path.read_bytes()

    def full(*_: object, **__: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("agc.extensions._repo.atomic_write_bytes", full)
    with pytest.raises(StoreError, match="no space left") as caught:
        repo.import_path(plugin)
    assert caught.value.exit_code == 3
    assert repo.index_path.read_bytes() == before
    assert len(os.listdir(repo.sources_dir)) == 1
    assert os.listdir(repo.root / "staging") == []


def test_a_crash_between_storing_and_indexing_leaves_nothing_half_imported(
    tmp_path: Path, store: Path
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    repo = ExtensionRepository(store)
    repo.import_path(plugin)
    before = repo.index_path.read_bytes()
    script = textwrap.dedent(
        f"""
        import os
        from agc.extensions import ExtensionRepository
        from agc.extensions import _repo
        def die(self, index):
            os._exit(9)  # the process dies: the source is moved, the index not written
        _repo.ExtensionRepository.save = die
        ExtensionRepository({str(store)!r}).import_path({str(plugin)!r})
        """
    )
    done = subprocess.run([sys.executable, "-c", script], env=_env(), check=False)
    assert done.returncode == 9
    assert repo.index_path.read_bytes() == before
    assert len(os.listdir(repo.sources_dir)) == 2  # one unreferenced folder
    repo.import_path(plugin)
    index = repo.load()
    assert sorted(os.listdir(repo.sources_dir)) == sorted(source.id for source in index.sources)
    assert [item.name for item in index.items][-3:] == ["art-skill-2", "code-skill-2", "search-2"]


@pytest.mark.parametrize("where", ["_stage", "discover", "_commit"])
def test_a_killed_import_leaves_no_staging_folder_behind_after_the_next_change(
    tmp_path: Path, store: Path, where: str
) -> None:
    plugin = plugin_with_two_skills_and_mcp(tmp_path)
    # The child dies (SIGKILL, no cleanup runs) after the step named, with its
    # staging folder filled.
    script = textwrap.dedent(
        f"""
        import os, signal
        from agc.extensions import ExtensionRepository, _repo
        target = _repo.ExtensionRepository if {where!r} != "discover" else _repo
        step = getattr(target, {where!r})
        def then_die(*args, **kwargs):
            if {where!r} != "_commit":
                step(*args, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)
        setattr(target, {where!r}, then_die)
        ExtensionRepository({str(store)!r}).import_path({str(plugin)!r})
        """
    )
    done = subprocess.run([sys.executable, "-c", script], env=_env(), check=False)
    assert done.returncode == -9
    repo = ExtensionRepository(store)
    assert len(os.listdir(repo.staging_dir)) == 1  # what the killed import left
    repo.import_path(plugin)
    assert os.listdir(repo.staging_dir) == []
    assert [item.name for item in repo.items()] == ["art-skill", "code-skill", "search"]


def test_a_removal_clears_an_abandoned_staging_folder_but_not_a_live_one(
    tmp_path: Path, store: Path
) -> None:
    repo = ExtensionRepository(store)
    result = repo.import_path(plugin_with_two_skills_and_mcp(tmp_path))
    abandoned = repo.staging_dir / "import-abandoned"
    live = repo.staging_dir / "import-live"
    for folder in (abandoned, live):
        (folder / "tree").mkdir(parents=True)
        (folder / "tree" / "big.bin").write_bytes(b"x" * 1024)
    holder = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(holder, fcntl.LOCK_EX)  # another import is still working in it
        repo.remove([result.items[0].id])
        assert os.listdir(repo.staging_dir) == ["import-live"]
    finally:
        os.close(holder)
    repo.remove([result.items[1].id])
    assert os.listdir(repo.staging_dir) == []


def test_concurrent_imports_from_several_processes_all_land_with_unique_names(
    tmp_path: Path, store: Path
) -> None:
    write_skill(tmp_path / "pkg" / "skills" / "access", "access")
    script = textwrap.dedent(
        f"""
        from agc.extensions import ExtensionRepository
        repo = ExtensionRepository({str(store)!r})
        for _ in range(3):
            repo.import_path({str(tmp_path / "pkg")!r})
        """
    )
    workers = [subprocess.Popen([sys.executable, "-c", script], env=_env()) for _ in range(4)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0, 0, 0]
    index = ExtensionRepository(store).load()
    names = [item.name for item in index.items]
    assert len(names) == 12
    assert sorted(names) == sorted(["access", *(f"access-{n}" for n in range(2, 13))])
    assert len(index.sources) == 12


@pytest.mark.parametrize("kind", ["link", "file"])
def test_a_link_or_file_in_place_of_a_stored_source_is_unlinked_never_followed(
    tmp_path: Path, store: Path, kind: str
) -> None:
    repo = ExtensionRepository(store)
    result = repo.import_path(write_skill(tmp_path / "skill", "lone").parent)
    stored = repo.source_dir(result.source)
    shutil.rmtree(stored)
    victim = tmp_path / "victim"
    (victim / "tree").mkdir(parents=True)
    (victim / "tree" / "precious").write_text("not agc's")
    if kind == "link":
        stored.symlink_to(victim, target_is_directory=True)
    else:
        stored.write_text("someone else's file")
    removed = repo.remove([result.items[0].id])
    assert [source.id for source in removed.sources] == [result.source.id]
    assert not stored.exists()
    assert not stored.is_symlink()
    assert (victim / "tree" / "precious").read_text() == "not agc's"
    assert repo.items() == ()


def test_a_source_with_more_items_than_the_limit_is_refused_whole(
    tmp_path: Path, store: Path
) -> None:
    folder = tmp_path / "many"
    folder.mkdir()
    servers = {f"s{index}": {"command": "x"} for index in range(6)}
    (folder / ".mcp.json").write_text(json.dumps({"mcpServers": servers}))
    repo = ExtensionRepository(store, limits=ImportLimits(max_entries=5))
    with pytest.raises(ArchiveRefusedError, match="holds 6 skills and MCP servers") as caught:
        repo.import_path(folder)
    assert caught.value.exit_code == 2
    assert repo.items() == ()
    assert os.listdir(repo.staging_dir) == []


def test_an_index_that_would_outgrow_what_agc_reads_back_is_never_written(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = ExtensionRepository(store)
    repo.import_path(write_skill(tmp_path / "first", "first").parent)
    before = repo.index_path.read_bytes()
    monkeypatch.setattr("agc.extensions._repo._MAX_INDEX_BYTES", len(before) + 100)
    folder = tmp_path / "big"
    folder.mkdir()
    (folder / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"big": {"command": "x", "args": ["a" * 4096]}}})
    )
    with pytest.raises(StoreError, match=r"more than the \d+ agc reads back") as caught:
        repo.import_path(folder)
    assert caught.value.exit_code == 3
    assert repo.index_path.read_bytes() == before
    assert [item.name for item in repo.load().items] == ["first"]
    assert len(os.listdir(repo.sources_dir)) == 1
