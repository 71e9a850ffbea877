"""The idx format of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/).

Header: 2 zero bytes, a type byte (0x08 = unsigned byte), the number of dimensions,
then one big-endian uint32 per dimension; the data follow in C order.
"""

from __future__ import annotations

import gzip
import math
import zlib
from pathlib import Path

import numpy as np

from fedrepro.errors import DataError

_UBYTE = 0x08


def read_idx_ubyte(path: Path, ndim: int) -> np.ndarray:
    """Decode a (gzipped if named *.gz) idx file of unsigned bytes with `ndim` dimensions."""
    path = Path(path)
    try:
        data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        raise DataError(f"{path}: corrupt or truncated gzip stream ({exc})") from None
    expected_magic = (_UBYTE << 8) | ndim  # 0x801 for labels, 0x803 for images
    header_len = 4 + 4 * ndim
    if len(data) < header_len or int.from_bytes(data[:4], "big") != expected_magic:
        raise DataError(
            f"{path}: not an idx file of {ndim}-d unsigned bytes "
            f"(magic number {data[:4].hex() or 'missing'}, expected {expected_magic:08x})"
        )
    shape = tuple(int.from_bytes(data[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim))
    if len(data) - header_len != math.prod(shape):
        raise DataError(
            f"{path}: header announces shape {shape} ({math.prod(shape)} bytes) "
            f"but {len(data) - header_len} bytes follow"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header_len).reshape(shape)
