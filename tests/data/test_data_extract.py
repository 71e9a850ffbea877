"""extract_tar: all-or-nothing, and hostile archives are refused."""

from __future__ import annotations

import io
import random
import tarfile
from pathlib import Path

import pytest

from fedrepro.errors import DataError
from fedrepro.data.extract import extract_tar


def _tar(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
            else:
                name, data = member
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return path


def _symlink(name: str, target: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = tarfile.SYMTYPE
    info.linkname = target
    return info


def test_extracts_into_destination(tmp_path):
    archive = _tar(tmp_path / "ok.tar.gz", [("top/a.txt", b"a"), ("top/sub/b.txt", b"b")])
    dest = extract_tar(archive, tmp_path / "out" / "x")
    assert (dest / "top" / "a.txt").read_bytes() == b"a"
    assert (dest / "top" / "sub" / "b.txt").read_bytes() == b"b"
    assert {p.name for p in (tmp_path / "out").iterdir()} == {"x"}  # temp dir renamed away


@pytest.mark.parametrize(
    "member",
    [
        ("../evil", b"escaped"),
        ("top/../../evil", b"escaped"),
        ("/tmp/fedrepro-absolute-evil", b"absolute"),
        _symlink("top/link", "../../evil"),
        _symlink("top/abslink", "/etc/passwd"),
    ],
    ids=["dotdot", "nested-dotdot", "absolute", "symlink-escape", "absolute-symlink"],
)
def test_unsafe_member_is_refused_and_nothing_is_left(tmp_path, member):
    archive = _tar(tmp_path / "evil.tar.gz", [("top/fine.txt", b"ok"), member])
    out = tmp_path / "out"
    with pytest.raises(DataError, match="refusing to extract .*unsafe member"):
        extract_tar(archive, out / "x")
    assert not (tmp_path / "evil").exists()
    assert not Path("/tmp/fedrepro-absolute-evil").exists()
    assert list(out.iterdir()) == []  # neither the destination nor a temp dir


def test_corrupt_archive_is_a_data_error(tmp_path):
    incompressible = random.Random(0).randbytes(100_000)
    good = _tar(tmp_path / "good.tar.gz", [("a.bin", incompressible)])
    truncated = tmp_path / "truncated.tar.gz"
    truncated.write_bytes(good.read_bytes()[:-2000])
    with pytest.raises(DataError, match="corrupt or truncated"):
        extract_tar(truncated, tmp_path / "out" / "x")
    assert list((tmp_path / "out").iterdir()) == []
