"""Unpickling data files without letting them run code.

Pickle can call any importable function while loading, so a data file from elsewhere is read by an
unpickler that resolves only the globals a pickle of numpy arrays, numpy scalars, lists, tuples,
dicts, numbers, strings and bytes refers to. Which globals those are depends on the numpy version and
the pickle protocol that wrote the file (checked with pickletools against numpy 1.x and 2.x):
  protocols 2-4: numpy.{core,_core}.multiarray._reconstruct, numpy.ndarray, numpy.dtype
  protocol 5:    numpy.{core,_core}.numeric._frombuffer (arrays by buffer), numpy.dtype
  numpy scalars: numpy.{core,_core}.multiarray.scalar
  bytes written by Python 3 at protocol 2: _codecs.encode
Everything else (os.system, builtins.eval, ...) is refused before it is imported.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any, BinaryIO

from fedrepro.errors import DataError

NUMPY_GLOBALS: frozenset[tuple[str, str]] = frozenset(
    {(f"numpy.{core}.multiarray", name) for core in ("core", "_core") for name in ("_reconstruct", "scalar")}
    | {(f"numpy.{core}.numeric", "_frombuffer") for core in ("core", "_core")}
    | {("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}
)


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle asked for a global outside the allowed set."""

    def __init__(self, module: str, name: str, what: str) -> None:
        super().__init__(f"global {module}.{name} is not allowed in {what}")
        self.module, self.name = module, name


class NumpyUnpickler(pickle.Unpickler):
    """Loads pickles of numpy arrays and plain Python values; any other global raises RefusedGlobal."""

    def __init__(self, file: BinaryIO, *, what: str = "a data file", encoding: str = "ASCII") -> None:
        super().__init__(file, encoding=encoding)
        self.what = what

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in NUMPY_GLOBALS:
            raise RefusedGlobal(module, name, self.what)
        return super().find_class(module, name)


def load_numpy_pickle(path: Path, *, encoding: str = "ASCII") -> Any:
    """The object pickled in `path`, read with NumpyUnpickler; every failure is a DataError naming the file."""
    path = Path(path)
    try:
        with open(path, "rb") as fh:
            return NumpyUnpickler(fh, what=str(path), encoding=encoding).load()
    except FileNotFoundError:
        raise DataError(f"{path} does not exist") from None
    except RefusedGlobal as exc:
        raise DataError(
            f"{path}: refused to unpickle it: it refers to {exc.module}.{exc.name}, which a pickle of numpy "
            f"arrays never needs (the file may run code when loaded); provide the arrays as .npz instead"
        ) from None
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError) as exc:
        raise DataError(f"{path} is not a readable pickle ({type(exc).__name__}: {exc})") from None
