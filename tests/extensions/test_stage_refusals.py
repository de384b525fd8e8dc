"""More archives an extension import refuses whole, naming the entry and the reason:
names no file system should be given (an empty name, a path over the limit),
links that cannot be links (named as a folder, a target too long, not UTF-8, empty or
with a NUL), entries a reader cannot trust (an unknown compression method, a missing
local header), and a file where an earlier entry needs a folder. What is safe in the
same archives is imported as it is (a folder given by its mode)."""

from __future__ import annotations

import os
import stat
import struct
import zipfile
from pathlib import Path
from typing import Any

import pytest

from agc.errors import ArchiveRefusedError
from agc.extensions import ExtensionRepository
from tests.extensions.builders import zip_entries

SKILL = b"---\nname: ok-skill\ndescription: fine\n---\nbody\n"


def _info(name: str, mode: int) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3  # Unix: the mode is in external_attr's high half
    info.external_attr = mode << 16
    return info


def _link(name: str) -> zipfile.ZipInfo:
    return _info(name, stat.S_IFLNK | 0o777)


def _refused(store: Path, archive: Path, *needles: str) -> str:
    repo = ExtensionRepository(store)
    with pytest.raises(ArchiveRefusedError) as caught:
        repo.import_path(archive)
    message = caught.value.message
    for needle in needles:
        assert needle in message
    assert message.startswith(f"{archive.name}: ")
    assert message.endswith("nothing was imported")
    assert repo.items() == ()
    assert not repo.sources_dir.exists() or os.listdir(repo.sources_dir) == []
    return message


@pytest.mark.parametrize(
    ("entries", "needles"),
    [
        ([(".", b"x")], ["entry '.' has an empty name"]),
        ([("/".join(["d" * 200] * 25), b"x")], ["has a path longer than"]),
        ([(_link("ok/link/"), b"SKILL.md")], ["'ok/link/' is a symbolic link named as a folder"]),
        ([(_link("ok/long"), b"a/" * 2100)], ["'ok/long' has a target longer than 4096 bytes"]),
        ([(_link("ok/latin"), "caf\u00e9".encode("latin-1"))], ["target that is not UTF-8"]),
        ([(_link("ok/empty"), b"")], ["'ok/empty' has an empty target or one with a NUL"]),
        ([(_link("ok/nul"), b"SKILL.md\x00x")], ["'ok/nul' has an empty target or one with a NUL"]),
        ([("a/x.md", b"1"), ("a", b"2")], ["entry 'a' is a file where 'a/x.md' needs a folder"]),
    ],
    ids=[
        "empty-name", "long-path", "link-as-folder", "link-target-long",
        "link-target-not-utf8", "link-target-empty", "link-target-nul", "file-after-folder",
    ],
)  # fmt: skip
def test_an_archive_with_an_unsafe_entry_is_refused_whole(
    tmp_path: Path,
    store: Path,
    entries: list[Any],
    needles: list[str],
) -> None:
    archive = zip_entries(tmp_path / "bad.zip", [("ok/SKILL.md", SKILL), *entries])
    _refused(store, archive, *needles)


def _central_offsets(data: bytes) -> list[int]:
    offsets, at = [], data.find(b"PK\x01\x02")
    while at != -1:
        offsets.append(at)
        at = data.find(b"PK\x01\x02", at + 4)
    return offsets


def test_an_entry_with_a_compression_method_agc_does_not_read_is_refused(
    tmp_path: Path, store: Path
) -> None:
    archive = zip_entries(tmp_path / "m.zip", [("ok/SKILL.md", SKILL), ("ok/x.md", b"x" * 100)])
    data = bytearray(archive.read_bytes())
    second = _central_offsets(bytes(data))[1]
    local = struct.unpack_from("<I", data, second + 42)[0]
    struct.pack_into("<H", data, second + 10, 9)  # Deflate64 (APPNOTE 4.4.5), central and
    struct.pack_into("<H", data, local + 8, 9)  # local headers alike
    archive.write_bytes(bytes(data))
    _refused(store, archive, "'ok/x.md'", "compression")


def test_an_entry_without_a_valid_local_header_is_refused(tmp_path: Path, store: Path) -> None:
    archive = zip_entries(tmp_path / "h.zip", [("ok/SKILL.md", SKILL), ("ok/x.md", b"x")])
    data = bytearray(archive.read_bytes())
    second = _central_offsets(bytes(data))[1]
    local = struct.unpack_from("<I", data, second + 42)[0]
    data[local : local + 4] = b"XXXX"
    archive.write_bytes(bytes(data))
    _refused(store, archive, "'ok/x.md' has no valid local header")


def test_a_folder_entry_given_by_its_mode_is_imported_as_a_folder(
    tmp_path: Path, store: Path
) -> None:
    archive = zip_entries(
        tmp_path / "ok.zip",
        [
            (_info("ok/assets", stat.S_IFDIR | 0o755), b""),  # no trailing "/": the mode says
            ("ok/SKILL.md", SKILL),
            ("ok/assets/a.txt", b"a"),
        ],
    )
    repo = ExtensionRepository(store)
    repo.import_path(archive)
    assert [item.name for item in repo.items()] == ["ok-skill"]
