"""Zip and folder safety: every refusal with an archive the test builds, and nothing
kept after a refusal."""

from __future__ import annotations

import os
import stat
import struct
import unicodedata
import warnings
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agc.errors import ArchiveRefusedError, InputError
from agc.extensions import ExtensionRepository, ImportLimits
from agc.extensions._stage import MAX_NAME_BYTES, MAX_PATH_BYTES
from tests.conftest import examples
from tests.extensions.builders import tree_bytes, write_skill, zip_entries, zip_folder

REACHES_INSIDE = {
    "agc.extensions._stage": "the staging limits on names and paths",
}

SKILL = b"---\nname: ok-skill\ndescription: fine\n---\nbody\n"


def _info(name: str, *, mode: int = stat.S_IFREG | 0o644, system: int = 3) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = system
    info.external_attr = mode << 16
    return info


def _assert_nothing_kept(repo: ExtensionRepository) -> None:
    assert repo.items() == ()
    sources = repo.sources_dir
    assert not sources.exists() or os.listdir(sources) == []
    staging = repo.root / "staging"
    assert not staging.exists() or os.listdir(staging) == []


def _refused(repo: ExtensionRepository, archive: Path, *needles: str) -> ArchiveRefusedError:
    with pytest.raises(ArchiveRefusedError) as caught:
        repo.import_path(archive)
    for needle in needles:
        assert needle in caught.value.message
    _assert_nothing_kept(repo)
    return caught.value


@pytest.mark.parametrize(
    ("entry", "why"),
    [
        ("../evil.txt", "'..' component"),
        ("skills/../../evil.txt", "'..' component"),
        ("..\\evil.txt", "'..' component"),
        ("/etc/evil", "absolute path"),
        ("\\\\server\\share\\evil", "absolute path"),
        ("C:/Windows/evil", "drive letter"),
        ("C:evil", "drive letter"),
        ("notes.txt:hidden", "alternate data stream"),
        ("\uff0e\uff0e/evil", "NFKC"),
        ("a\uff0fb.txt", "NFKC"),
    ],
)
def test_an_entry_whose_path_escapes_is_refused_with_its_name(
    tmp_path: Path, store: Path, entry: str, why: str
) -> None:
    archive = zip_entries(tmp_path / "bad.zip", [("ok/SKILL.md", SKILL), (entry, b"x")])
    error = _refused(ExtensionRepository(store), archive, why, "nothing was imported")
    assert repr(entry) in error.message or entry in error.message


def _link(name: str) -> zipfile.ZipInfo:
    return _info(name, mode=stat.S_IFLNK | 0o777)


@pytest.mark.parametrize(
    "target",
    [
        "/etc/passwd",
        "../../../outside",
        "../../../etc",
        "../ok/../../../x",
        "..\\..\\..\\x",
        "C:/Windows",
        "hop",  # through another link that escapes
    ],
)
def test_a_symlink_entry_that_leaves_the_archive_refuses_it_whole(
    tmp_path: Path, store: Path, target: str
) -> None:
    hop = [(_link("repo-main/ok/hop"), b"../../../escape")] if target == "hop" else []
    archive = zip_entries(
        tmp_path / "link.zip",
        [("repo-main/ok/SKILL.md", SKILL), *hop, (_link("repo-main/ok/link"), target.encode())],
    )
    _refused(ExtensionRepository(store), archive, "symbolic link entry", "outside the archive")


def test_a_git_archive_with_internal_links_imports_like_its_folder(
    tmp_path: Path, store: Path
) -> None:
    """The shape of GitHub's "Download ZIP" and `git archive --format=zip`: one top
    folder, links stored as S_IFLNK entries holding their target."""
    reference = b"# Shared reference\n"
    archive = zip_entries(
        tmp_path / "repo-main.zip",
        [
            ("repo-main/docs/reference.md", reference),
            ("repo-main/skills/art/SKILL.md", SKILL),
            (_link("repo-main/skills/art/reference.md"), b"../../docs/reference.md"),
            (_link("repo-main/skills/art/docs"), b"../../docs"),
            (_link("repo-main/skills/art/gone.md"), b"../../nothing-here.md"),
            (_link("repo-main/skills/art/chain.md"), b"reference.md"),
            (_link("repo-main/loop-a"), b"loop-b"),
            (_link("repo-main/loop-b"), b"loop-a"),
        ],
    )
    repo = ExtensionRepository(store)
    result = repo.import_path(archive)
    assert [item.name for item in result.items] == ["ok-skill"]
    stored = repo.tree_dir(result.source) / "repo-main"
    assert not any(path.is_symlink() for path in stored.rglob("*"))
    assert (stored / "skills/art/reference.md").read_bytes() == reference
    assert (stored / "skills/art/chain.md").read_bytes() == reference
    for absent in ("skills/art/docs", "skills/art/gone.md", "loop-a", "loop-b"):
        assert not (stored / absent).exists()
    notes = "\n".join(result.notes)
    assert "repo-main/skills/art/reference.md: symbolic link kept as a copy of " in notes
    assert "repo-main/skills/art/docs: symbolic link to the folder repo-main/docs skipped" in notes
    assert "repo-main/skills/art/gone.md: symbolic link to repo-main/nothing-here.md" in notes
    assert "repo-main/loop-a: symbolic link loop skipped" in notes


def test_a_link_copy_counts_against_the_byte_limit(tmp_path: Path, store: Path) -> None:
    big = b"x" * 4000
    entries: list[tuple[str, bytes] | tuple[zipfile.ZipInfo, bytes]] = [("top/big.txt", big)]
    entries += [(_link(f"top/copy-{n}.txt"), b"big.txt") for n in range(5)]
    archive = zip_entries(tmp_path / "copies.zip", entries)
    repo = ExtensionRepository(store, limits=ImportLimits(max_total_bytes=10_000))
    _refused(repo, archive, "with its links kept as copies")


_LINK_PARTS = st.sampled_from(["..", ".", "a", "b", "f.txt", "l1", "l2", ""])


def _lexical(
    target: str,
    links: dict[tuple[str, ...], str],
    start: list[str],
    folders: frozenset[tuple[str, ...]] = frozenset({(), ("a",), ("a", "b")}),
) -> object:
    """An independent resolver for the property: 'escape', 'loop', 'missing' or the
    final path (the archive's folders are ``a`` and ``a/b``)."""
    if target.startswith("/"):
        return "escape"
    resolved = list(start)
    pending = target.split("/")
    hops = 0
    while pending:
        part = pending.pop(0)
        if part in {"", "."}:
            continue
        if part == "..":
            if not resolved:
                return "escape"
            resolved.pop()
            continue
        if (*resolved, part) in links:
            hops += 1
            if hops > 40:
                return "loop"
            if links[(*resolved, part)].startswith("/"):
                return "escape"
            pending = links[(*resolved, part)].split("/") + pending
            continue
        resolved.append(part)
        if any(p not in {"", "."} for p in pending) and tuple(resolved) not in folders:
            return "missing"
    return tuple(resolved)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    first=st.lists(_LINK_PARTS, min_size=1, max_size=5),
    second=st.lists(_LINK_PARTS, min_size=1, max_size=5),
)
def test_any_link_target_is_refused_exactly_when_it_leaves_the_archive(
    tmp_path_factory: pytest.TempPathFactory, first: list[str], second: list[str]
) -> None:
    base = tmp_path_factory.mktemp("links")
    targets: dict[tuple[str, ...], str] = {
        ("a", "l1"): "/".join(first),
        ("a", "l2"): "/".join(second),
    }
    if not targets[("a", "l1")].strip("/") or not targets[("a", "l2")].strip("/"):
        return  # an empty target is refused as such, not by where it leads
    archive = zip_entries(
        base / "l.zip",
        [
            ("a/f.txt", b"file"),
            ("a/b/f.txt", b"deeper"),
            (_link("a/l1"), targets[("a", "l1")].encode()),
            (_link("a/l2"), targets[("a", "l2")].encode()),
        ],
    )
    outcomes = [_lexical(targets[key], targets, ["a"]) for key in targets]
    repo = ExtensionRepository(base / "store")
    if "escape" in outcomes:
        event("escapes")
        _refused(repo, archive, "outside the archive")
        return
    result = repo.import_path(archive)
    tree = repo.tree_dir(result.source)
    assert not any(path.is_symlink() for path in tree.rglob("*"))
    for key, outcome in zip(targets, outcomes, strict=True):
        copy = tree.joinpath(*key)
        if outcome in {("a", "f.txt"), ("a", "b", "f.txt")}:
            event("copied")
            assert isinstance(outcome, tuple)
            assert copy.read_bytes() == tree.joinpath(*outcome).read_bytes()
        else:
            event("skipped")
            assert not copy.exists()


@pytest.mark.parametrize("kind", [stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK, stat.S_IFSOCK])
def test_a_device_or_fifo_entry_is_refused(tmp_path: Path, store: Path, kind: int) -> None:
    special = _info("ok/dev", mode=kind | 0o644)
    archive = zip_entries(tmp_path / "dev.zip", [("ok/SKILL.md", SKILL), (special, b"")])
    _refused(ExtensionRepository(store), archive, "'ok/dev'", "device, FIFO or socket")


@pytest.mark.filterwarnings("ignore:Duplicate name")
@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("skills/a/SKILL.md", "skills/A/skill.md"),
        ("caf\u00e9.md", "cafe\u0301.md"),
        ("\ufb01le.txt", "file.txt"),
        ("same.txt", "same.txt"),
        # Folders spelled two ways hold different files: two folders on a case-sensitive disk.
        ("a/a", "A/b"),
        ("caf\u00e9/x.md", "cafe\u0301/y.md"),
    ],
)
def test_entries_that_collide_after_case_folding_or_nfkc_are_refused(
    tmp_path: Path, store: Path, first: str, second: str
) -> None:
    archive = zip_entries(tmp_path / "dup.zip", [(first, b"1"), (second, b"2")])
    _refused(ExtensionRepository(store), archive, "collide", repr(second))


def test_a_file_where_another_entry_needs_a_folder_is_refused(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(tmp_path / "clash.zip", [("docs", b"file"), ("docs/readme.md", b"x")])
    _refused(ExtensionRepository(store), archive, "'docs/readme.md'", "needs a folder")


def _central_entries(data: bytes) -> list[int]:
    offsets = []
    start = 0
    while (found := data.find(b"PK\x01\x02", start)) != -1:
        offsets.append(found)
        start = found + 4
    return offsets


def test_overlapping_entries_are_refused(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(
        tmp_path / "overlap.zip", [("ok/SKILL.md", SKILL), ("ok/other.md", b"other" * 100)]
    )
    data = bytearray(archive.read_bytes())
    first, second = _central_entries(bytes(data))
    first_offset = struct.unpack_from("<L", data, first + 42)[0]
    # The second entry now points at the first one's local header: one set of bytes,
    # two names (the "overlapping files" zip bomb).
    struct.pack_into("<L", data, second + 42, first_offset)
    archive.write_bytes(bytes(data))
    _refused(ExtensionRepository(store), archive, "overlaps")


def test_an_entry_pointing_into_another_entrys_data_is_refused(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(
        tmp_path / "inside.zip", [("ok/SKILL.md", SKILL * 40), ("ok/b.md", b"b" * 10)]
    )
    data = bytearray(archive.read_bytes())
    first, second = _central_entries(bytes(data))
    first_offset = struct.unpack_from("<L", data, first + 42)[0]
    struct.pack_into("<L", data, second + 42, first_offset + 40)
    archive.write_bytes(bytes(data))
    with pytest.raises(ArchiveRefusedError):
        ExtensionRepository(store).import_path(archive)
    _assert_nothing_kept(ExtensionRepository(store))


def test_an_encrypted_entry_is_refused(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(tmp_path / "enc.zip", [("ok/SKILL.md", SKILL), ("ok/secret.md", b"x")])
    data = bytearray(archive.read_bytes())
    second = _central_entries(bytes(data))[1]
    flags = struct.unpack_from("<H", data, second + 8)[0]
    struct.pack_into("<H", data, second + 8, flags | 0x1)  # "encrypted" bit
    archive.write_bytes(bytes(data))
    _refused(ExtensionRepository(store), archive, "'ok/secret.md'", "encrypted")


def test_more_entries_than_the_limit_are_refused(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(tmp_path / "many.zip", [(f"f{n}.txt", b"x") for n in range(6)])
    repo = ExtensionRepository(store, limits=ImportLimits(max_entries=5))
    _refused(repo, archive, "6 entries", "limit is 5")


def test_an_archive_declaring_more_bytes_than_the_limit_is_refused(
    tmp_path: Path, store: Path
) -> None:
    archive = zip_entries(tmp_path / "big.zip", [("a.bin", b"ab" * 2500), ("b.bin", b"x" * 10)])
    repo = ExtensionRepository(store, limits=ImportLimits(max_total_bytes=4000))
    _refused(repo, archive, "declares", "limit is 4000")


def test_a_highly_compressed_entry_is_refused_as_a_zip_bomb(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(
        tmp_path / "bomb.zip", [("ok/SKILL.md", SKILL), ("zeros.bin", bytes(8 << 20))]
    )
    _refused(ExtensionRepository(store), archive, "'zeros.bin'", "zip bomb")


def test_an_entry_that_lies_about_its_size_is_refused_while_streaming(
    tmp_path: Path, store: Path
) -> None:
    archive = zip_entries(
        tmp_path / "liar.zip", [("ok/SKILL.md", SKILL), ("zeros.bin", bytes(3 << 20))]
    )
    data = bytearray(archive.read_bytes())
    second = _central_entries(bytes(data))[1]
    # Declare 1000 bytes uncompressed: the ratio check on declared sizes passes, the
    # bytes actually produced do not.
    struct.pack_into("<L", data, second + 24, 1000)
    archive.write_bytes(bytes(data))
    with pytest.raises(ArchiveRefusedError) as caught:
        ExtensionRepository(store).import_path(archive)
    assert "'zeros.bin'" in caught.value.message
    _assert_nothing_kept(ExtensionRepository(store))


def test_the_sizes_of_all_entries_add_up_against_the_limit(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(tmp_path / "sum.zip", [(f"part{n}.bin", b"xy" * 1500) for n in range(4)])
    repo = ExtensionRepository(store, limits=ImportLimits(max_total_bytes=12_000 - 1))
    _refused(repo, archive)


def test_a_file_that_is_not_a_zip_but_named_zip_is_a_clear_input_error(
    tmp_path: Path, store: Path
) -> None:
    archive = tmp_path / "broken.zip"
    archive.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(InputError, match="not a readable zip archive"):
        ExtensionRepository(store).import_path(archive)
    _assert_nothing_kept(ExtensionRepository(store))


def test_a_safe_zip_is_extracted_with_its_executable_bits(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "bundle"
    write_skill(folder / "skills" / "art", "art")
    script = folder / "skills" / "art" / "scripts" / "run.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    archive = zip_folder(folder, tmp_path / "bundle.zip", top="bundle")
    repo = ExtensionRepository(store)
    result = repo.import_path(archive)
    assert [item.name for item in result.items] == ["art"]
    tree = repo.tree_dir(result.source)
    stored = tree / "bundle" / "skills" / "art" / "scripts" / "run.sh"
    assert stored.read_bytes() == b"#!/bin/sh\n"
    assert stored.stat().st_mode & 0o100
    assert (repo.source_dir(result.source) / "archive.zip").read_bytes() == archive.read_bytes()


# -- folders ------------------------------------------------------------------------------


def test_a_folder_import_never_follows_a_symlink_out_of_the_folder(
    tmp_path: Path, store: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    outside = tmp_path / "outside"
    (outside / "nested").mkdir(parents=True)
    (outside / "nested" / "key.pem").write_text("PRIVATE")
    folder = tmp_path / "pkg"
    write_skill(folder / "skills" / "art", "art")
    (folder / "skills" / "art" / "leak.txt").symlink_to(secret)
    (folder / "skills" / "art" / "dir-link").symlink_to(outside, target_is_directory=True)
    repo = ExtensionRepository(store)
    result = repo.import_path(folder)
    stored = repo.tree_dir(result.source)
    everything = b"".join(path.read_bytes() for path in stored.rglob("*") if path.is_file())
    assert b"TOP SECRET" not in everything
    assert b"PRIVATE" not in everything
    assert not any(path.is_symlink() for path in stored.rglob("*"))
    assert any("leak.txt: symbolic link skipped" in note for note in result.notes)
    assert any("dir-link: symbolic link skipped" in note for note in result.notes)


def test_a_folder_link_to_a_file_inside_is_kept_as_a_copy_like_in_an_archive(
    tmp_path: Path,
) -> None:
    """The folder of a repository and its `git archive` zip give the same tree."""
    reference = b"# Shared reference\n"
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    folder = tmp_path / "repo-main"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "reference.md").write_bytes(reference)
    write_skill(folder / "skills" / "art", "art")
    art = folder / "skills" / "art"
    (art / "reference.md").symlink_to("../../docs/reference.md")
    (art / "docs").symlink_to("../../docs", target_is_directory=True)
    (art / "gone.md").symlink_to("../../nothing-here.md")
    (art / "out.txt").symlink_to("../../../secret.txt")
    (art / "abs.txt").symlink_to(secret)
    (art / "via-link.md").symlink_to("docs/reference.md")
    (art / "loop").symlink_to("loop")
    store = folder / ".agc"  # a store inside the folder: a link into it is not copied
    repo = ExtensionRepository(store)
    (folder / "index-link.json").symlink_to(".agc/extensions/index.json")
    repo.import_path(write_skill(tmp_path / "first", "first"))  # the index now exists
    assert (store / "extensions" / "index.json").is_file()
    result = repo.import_path(folder)
    stored = repo.tree_dir(result.source)
    assert not any(path.is_symlink() for path in stored.rglob("*"))
    assert (stored / "skills/art/reference.md").read_bytes() == reference
    for absent in ("docs", "gone.md", "out.txt", "abs.txt", "via-link.md", "loop"):
        assert not (stored / "skills/art" / absent).exists()
    assert not (stored / "index-link.json").exists()
    everything = b"".join(path.read_bytes() for path in stored.rglob("*") if path.is_file())
    assert b"TOP SECRET" not in everything
    notes = "\n".join(result.notes)
    assert "skills/art/reference.md: symbolic link kept as a copy" in notes
    assert "skills/art/out.txt: symbolic link skipped (agc never follows links out of" in notes
    assert (
        "index-link.json: symbolic link skipped (agc never follows links into the extension"
        in notes
    )

    zipped = zip_entries(
        tmp_path / "repo-main.zip",
        [
            ("repo-main/docs/reference.md", reference),
            ("repo-main/skills/art/SKILL.md", (art / "SKILL.md").read_bytes()),
            (_link("repo-main/skills/art/reference.md"), b"../../docs/reference.md"),
            (_link("repo-main/skills/art/docs"), b"../../docs"),
            (_link("repo-main/skills/art/gone.md"), b"../../nothing-here.md"),
        ],
    )
    from_zip = repo.import_path(zipped)
    zipped_tree = repo.tree_dir(from_zip.source) / "repo-main"
    assert tree_bytes(zipped_tree) == {
        key: value
        for key, value in tree_bytes(stored).items()
        if key.startswith(("docs/", "skills/"))
    }


def test_a_fifo_in_a_folder_is_skipped_without_hanging(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "pkg"
    write_skill(folder, "solo")
    os.mkfifo(folder / "pipe")
    result = ExtensionRepository(store).import_path(folder)
    assert [item.name for item in result.items] == ["solo"]
    assert any("pipe: special file skipped" in note for note in result.notes)


def test_a_folder_with_more_entries_than_the_limit_is_refused(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    for number in range(8):
        (folder / f"f{number}.txt").write_text("x")
    repo = ExtensionRepository(store, limits=ImportLimits(max_entries=5))
    with pytest.raises(ArchiveRefusedError, match="more than 5"):
        repo.import_path(folder)
    _assert_nothing_kept(repo)


def test_a_folder_larger_than_the_limit_is_refused(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "a.bin").write_bytes(b"x" * 3000)
    (folder / "b.bin").write_bytes(b"x" * 3000)
    repo = ExtensionRepository(store, limits=ImportLimits(max_total_bytes=5000))
    with pytest.raises(ArchiveRefusedError, match="larger than the import limit"):
        repo.import_path(folder)
    _assert_nothing_kept(repo)


def test_a_file_name_that_is_not_utf8_is_refused(tmp_path: Path, store: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    fd = os.open(os.fsencode(folder) + b"/bad-\xff.txt", os.O_WRONLY | os.O_CREAT, 0o644)
    os.close(fd)
    with pytest.raises(InputError, match="not UTF-8"):
        ExtensionRepository(store).import_path(folder)
    _assert_nothing_kept(ExtensionRepository(store))


_PARTS = st.sampled_from(
    [
        "a",
        "A",
        "b",
        ".",
        "..",
        "",
        "skills",
        "SKILL.md",
        "c:",
        "C:",
        "x:y",
        "\uff0e\uff0e",
        "\ufb01",
        "fi",
        "caf\u00e9",
        "cafe\u0301",
    ]
)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.lists(
        st.tuples(
            st.lists(_PARTS, min_size=1, max_size=4), st.sampled_from(["/", "\\"]), st.booleans()
        ),
        min_size=1,
        max_size=6,
    )
)
def test_any_archive_is_either_refused_whole_or_extracted_inside_its_tree(
    tmp_path_factory: pytest.TempPathFactory, entries: list[tuple[list[str], str, bool]]
) -> None:
    root = tmp_path_factory.mktemp("prop")
    names = []
    for parts, separator, leading in entries:
        name = separator.join(parts)
        names.append(separator + name if leading else name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        archive = zip_entries(root / "a.zip", [(name, b"x") for name in names if name])
    repo = ExtensionRepository(root / "store")
    try:
        result = repo.import_path(archive)
    except (ArchiveRefusedError, InputError):
        event("refused")
        _assert_nothing_kept(repo)
        assert sorted(os.listdir(root)) == ["a.zip", "store"]
        return
    event("extracted")
    tree = repo.tree_dir(result.source).resolve()
    stored = list(tree.rglob("*"))
    assert all(path.resolve().is_relative_to(tree) for path in stored)
    keys = [
        "/".join(
            unicodedata.normalize("NFKC", part).casefold() for part in path.relative_to(tree).parts
        )
        for path in stored
    ]
    assert len(keys) == len(set(keys))
    assert sorted(os.listdir(root)) == ["a.zip", "store"]


@settings(
    max_examples=examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    parts=st.lists(
        st.tuples(st.sampled_from(["a", "é", "中", "😀"]), st.integers(min_value=1, max_value=300)),
        min_size=1,
        max_size=12,
    )
)
def test_a_name_too_long_for_a_file_system_is_refused_as_the_archives_fault(
    tmp_path_factory: pytest.TempPathFactory, parts: list[tuple[str, int]]
) -> None:
    root = tmp_path_factory.mktemp("long")
    components = [char * count for char, count in parts]
    name = "/".join(components) + ".md"
    archive = zip_entries(root / "a.zip", [("SKILL.md", b"---\nname: a\n---\n"), (name, b"x")])
    too_long = any(
        len(c.encode()) > MAX_NAME_BYTES for c in [*components[:-1], components[-1] + ".md"]
    )
    too_long = too_long or len(name.encode()) > MAX_PATH_BYTES
    repo = ExtensionRepository(root / "store")
    if too_long:
        with pytest.raises(ArchiveRefusedError, match="longer than") as caught:
            repo.import_path(archive)
        assert caught.value.exit_code == 2
        _assert_nothing_kept(repo)
    else:
        result = repo.import_path(archive)
        assert (repo.tree_dir(result.source) / name).read_bytes() == b"x"


def test_a_folder_holding_a_path_too_long_for_the_store_is_refused(
    tmp_path: Path, store: Path
) -> None:
    source = tmp_path / "src"
    write_skill(source, "deep")
    # Built through descriptors: the whole path is longer than the kernel takes at once.
    fd = os.open(source, os.O_RDONLY)
    try:
        for _ in range(6):
            os.mkdir("d" * 200, dir_fd=fd)
            child = os.open("d" * 200, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        os.close(os.open("f.md", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
    finally:
        os.close(fd)
    with pytest.raises(ArchiveRefusedError, match="longer than") as caught:
        ExtensionRepository(store).import_path(source)
    assert caught.value.exit_code == 2
    _assert_nothing_kept(ExtensionRepository(store))


def _many_entries(path: Path, count: int, *, declared: int | None = None) -> Path:
    """A zip of ``count`` tiny entries whose end record declares ``declared`` of them."""
    zip_entries(path, [(f"f{index}.txt", b"") for index in range(count)])
    if declared is not None:
        data = bytearray(path.read_bytes())
        at = data.rfind(b"PK\x05\x06")
        struct.pack_into("<2H", data, at + 8, declared, declared)
        path.write_bytes(bytes(data))
    return path


def _never_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    def parse(*_: object, **__: object) -> None:
        raise AssertionError("the central directory was parsed")

    monkeypatch.setattr("agc.extensions._stage.zipfile.ZipFile", parse)


def test_an_archive_declaring_too_many_entries_is_refused_before_parsing(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _many_entries(tmp_path / "many.zip", 30)
    _never_parsed(monkeypatch)
    repo = ExtensionRepository(store, limits=ImportLimits(max_entries=10))
    with pytest.raises(ArchiveRefusedError, match="it has 30 entries; the limit is 10"):
        repo.import_path(archive)
    _assert_nothing_kept(repo)


def test_an_archive_under_declaring_its_entries_is_refused_by_its_directory_size(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    archive = _many_entries(tmp_path / "liar.zip", 2000, declared=3)
    _never_parsed(monkeypatch)
    repo = ExtensionRepository(store, limits=ImportLimits(max_entries=10))
    with pytest.raises(ArchiveRefusedError, match=r"central directory is \d+ bytes, more than 10 "):
        repo.import_path(archive)
    _assert_nothing_kept(repo)


def test_an_archive_hiding_more_entries_than_the_limit_in_a_small_directory_is_refused_unparsed(
    tmp_path: Path, store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 300 tiny entries fit in the directory size 10 entries may have (about 21 kB).
    archive = _many_entries(tmp_path / "hidden.zip", 300, declared=3)
    _never_parsed(monkeypatch)
    repo = ExtensionRepository(store, limits=ImportLimits(max_entries=10))
    with pytest.raises(ArchiveRefusedError, match="holds more than 10 entries"):
        repo.import_path(archive)
    _assert_nothing_kept(repo)


@settings(max_examples=examples(25), deadline=None)
@given(actual=st.integers(0, 40), declared=st.integers(0, 40))
def test_an_end_record_count_other_than_the_directory_holds_is_refused(
    tmp_path_factory: pytest.TempPathFactory, actual: int, declared: int
) -> None:
    base = tmp_path_factory.mktemp("count")
    archive = _many_entries(base / "c.zip", actual, declared=declared)
    repo = ExtensionRepository(base / "store", limits=ImportLimits(max_entries=30))
    if declared > 30 or actual > 30 or declared != actual:
        event("refused")
        with pytest.raises(ArchiveRefusedError):
            repo.import_path(archive)
        _assert_nothing_kept(repo)
    else:
        event("imported")
        assert repo.import_path(archive).source.kind == "zip"


def test_an_archive_within_the_limits_is_still_parsed_and_extracted(
    tmp_path: Path, store: Path
) -> None:
    archive = _many_entries(tmp_path / "fine.zip", 10)
    result = ExtensionRepository(store, limits=ImportLimits(max_entries=10)).import_path(archive)
    assert [item.type for item in result.items] == ["unknown"]


def test_a_folder_holding_the_store_is_imported_without_the_repository_itself(
    tmp_path: Path,
) -> None:
    project_dir = tmp_path / "project"
    write_skill(project_dir / "skills" / "tool", "tool")
    repo = ExtensionRepository(project_dir / ".agc")  # AGC_HOME=./.agc, then `import .`
    repo.import_path(project_dir / "skills" / "tool")
    (project_dir / ".agc" / "kept.txt").write_text("the rest of the store is content")
    result = repo.import_path(project_dir)
    assert [item.name for item in result.items] == ["tool-2"]
    assert ".agc/extensions: the extension repository itself skipped" in result.notes
    stored = repo.tree_dir(result.source)
    assert not (stored / ".agc" / "extensions").exists()
    assert (stored / ".agc" / "kept.txt").read_text() == "the rest of the store is content"
    assert os.listdir(repo.staging_dir) == []
