"""Safe, all-or-nothing tar extraction."""

from __future__ import annotations

import gzip
import os
import shutil
import tarfile
import zlib
from pathlib import Path

from fedrepro.errors import DataError
from fedrepro.utils.atomic import temporary_sibling


def _strict_data_filter(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    # The "data" filter refuses members and links that would land outside `dest`, device
    # files and the like, but it silently strips a leading "/" from absolute names. No
    # dataset archive has a reason to contain one, so treat it as hostile too.
    if os.path.isabs(member.name):
        raise tarfile.AbsolutePathError(member)
    return tarfile.data_filter(member, dest)


def extract_tar(archive: Path, dest: Path) -> Path:
    """Extract `archive` (any compression tarfile reads) into the directory `dest`.

    Extraction goes to a temporary directory beside `dest`, renamed onto it only when
    complete; an existing `dest` is replaced. Unsafe members (absolute paths, `..`,
    links escaping the directory, device files) or a corrupt archive raise DataError and
    leave nothing behind.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(dest, directory=True)
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(tmp, filter=_strict_data_filter)
    except tarfile.FilterError as exc:
        shutil.rmtree(tmp)
        raise DataError(
            f"refusing to extract {archive}: unsafe member {exc.tarinfo.name!r} ({exc})"
        ) from None
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        shutil.rmtree(tmp)
        raise DataError(f"cannot extract {archive}: corrupt or truncated archive ({exc})") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if dest.exists():
        shutil.rmtree(dest)
    os.replace(tmp, dest)
    return dest
