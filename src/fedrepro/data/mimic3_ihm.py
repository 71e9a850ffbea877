"""MIMIC-III in-hospital mortality (IHM), as the user provides it, checked and decoded once.

MIMIC-III needs PhysioNet credentialed access, so the project cannot ship it (docs/papers/tdcd.md R19).
The user builds the Harutyunyan et al. benchmark arrays and puts them under data/raw/mimic3_ihm/ as
either
  train_raw.pkl, test_raw.pkl (and optionally val_raw.pkl): each a pickled (X, y) tuple, X float
      [n, 48, 76], y a list or array of 0/1 ints (the authors' train_raw1.pkl / test_raw1.pkl), or
  ihm.npz with X_train, y_train, X_test, y_test (and optionally X_val, y_val), saved without pickle.
Pickles are read by a restricted unpickler (formats/safe_pickle.py), the .npz with allow_pickle=False.

Prepared file data/prepared/mimic3_ihm.npz (the layout of the synthetic-IHM stand-in too):
  x_train float32 (n, 48, 76), y_train int64 0/1, x_test, y_test [, x_val, y_val]
as given, not shuffled (the run shuffles with its own seeded permutation).
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

import numpy as np

from fedrepro.errors import DataError
from fedrepro.data.formats.safe_pickle import load_numpy_pickle
from fedrepro.utils import atomic

log = logging.getLogger(__name__)

KEY = "mimic3_ihm"
TIME_STEPS = 48
N_FEATURES = 76
# The benchmark's discretizer header order (its discretizer_config.json): 59 value columns, then one
# missingness mask per channel (17):
MASK_COLUMNS: tuple[int, ...] = tuple(range(59, 76))
PAPER_ROWS = {"train": 14681, "test": 3236}  # the paper's counts (§5.1); other versions are accepted
# The paper says 16% positives, the benchmark has about 13% in train and 11% in test; the band only
# catches inverted, all-zero or otherwise mangled labels.
POSITIVE_BAND = (0.05, 0.30)

# What a file may build, from its size, before anything is allocated: a pickle's nested lists may share one
# row many times (a 1.6 MB pickle declaring 400000 x 48 x 76 floats, 11.7 GB), and a compressed .npz may
# inflate far beyond its size. A real pickle takes at least a byte per element it builds (raw float32: 4);
# float data from the benchmark does not compress 64-fold.
ELEMENTS_PER_FILE_BYTE = 1
NPZ_INFLATION = 64

PICKLES = {"train": "train_raw.pkl", "val": "val_raw.pkl", "test": "test_raw.pkl"}
NPZ_NAME = "ihm.npz"
HOW_TO_PROVIDE = (
    "To provide MIMIC-III (PhysioNet credentialed access), run the YerevaNN/mimic3-benchmarks steps "
    "extract_subjects -> validate_events -> extract_episodes_from_subjects -> split_train_and_test -> "
    "create_in_hospital_mortality -> split_train_val, load each split with "
    "mimic3models.in_hospital_mortality.utils.load_data(reader, discretizer, normalizer) (Discretizer("
    "timestep=1.0, store_masks=True, impute_strategy='previous', start_time='zero') and the shipped "
    "ihm_ts1.0 normalizer), and save the (X, y) tuples as data/raw/mimic3_ihm/{train,val,test}_raw.pkl, "
    f"or all arrays as data/raw/mimic3_ihm/{NPZ_NAME} (X_train, y_train, X_test, y_test; np.savez). "
    "Without it the pipeline uses the synthetic-IHM stand-in."
)


def raw_files(raw_dir: Path) -> list[Path]:
    """The user's files that prepare_mimic3_ihm would read (empty when none is there)."""
    raw_dir = Path(raw_dir)
    if (raw_dir / NPZ_NAME).is_file():
        return [raw_dir / NPZ_NAME]
    return [raw_dir / name for name in PICKLES.values() if (raw_dir / name).is_file()]


def is_provided(raw_dir: Path) -> bool:
    raw_dir = Path(raw_dir)
    return (raw_dir / NPZ_NAME).is_file() or all((raw_dir / PICKLES[s]).is_file() for s in ("train", "test"))


def read_raw(raw_dir: Path) -> dict[str, tuple[object, object, Path]]:
    """split -> (X, y, file) as stored, before any check."""
    raw_dir = Path(raw_dir)
    npz, pickles = raw_dir / NPZ_NAME, {s: raw_dir / n for s, n in PICKLES.items()}
    if npz.is_file():
        if any(p.is_file() for p in pickles.values()):
            raise DataError(f"{raw_dir} holds both {NPZ_NAME} and *_raw.pkl files; keep one of the two forms "
                            f"so it is clear which data a run read")
        return _read_npz(npz)
    missing = [p.name for s, p in pickles.items() if s != "val" and not p.is_file()]
    if missing:
        raise DataError(f"MIMIC-III IHM data not found: {', '.join(missing)} missing in {raw_dir} (and no "
                        f"{NPZ_NAME}). {HOW_TO_PROVIDE}")
    return {split: (*_read_pickle(path), path) for split, path in pickles.items() if path.is_file()}


def _read_pickle(path: Path) -> tuple[object, object]:
    # latin1: a pickle written by Python 2 stores numpy's array bytes as str (harmless for Python 3 ones).
    obj = load_numpy_pickle(path, encoding="latin1")
    if not (isinstance(obj, (tuple, list)) and len(obj) == 2):
        raise DataError(f"{path}: holds a {type(obj).__name__}, expected a pickled (X, y) tuple as returned by "
                        f"mimic3models.in_hospital_mortality.utils.load_data")
    return obj[0], obj[1]


def _declared_elements(obj: object) -> int:
    """How many elements np.asarray(obj) would build, read from the first entry at each level of nested
    lists and tuples (an array counts its own), without building them."""
    count = 1
    while isinstance(obj, (list, tuple)) and obj:
        count *= len(obj)
        obj = obj[0]
    return count * (obj.size if isinstance(obj, np.ndarray) else 1)


def _bounded(split: str, X: object, y: object, source: Path) -> None:
    """Refuse what would build more elements than its file could hold (ELEMENTS_PER_FILE_BYTE); arrays made in
    memory (the synthetic stand-in, named by a label, not a file) have nothing to bound."""
    if not Path(source).is_file():
        return
    size = Path(source).stat().st_size
    declared = _declared_elements(X) + _declared_elements(y)
    if declared > ELEMENTS_PER_FILE_BYTE * size:
        raise DataError(f"{source} ({split}): declares {declared:,} elements in a file of {size:,} bytes (its lists "
                        f"repeat the same rows); refused before building them. Save real arrays, e.g. as .npz")


def _npz_bounded(path: Path) -> None:
    """Refuse an .npz whose arrays declare (in their .npy headers) more than NPZ_INFLATION x its size."""
    size, declared = path.stat().st_size, 0
    npy = np.lib.format
    try:
        with zipfile.ZipFile(path) as archive:
            for member in archive.namelist():
                with archive.open(member) as fh:
                    version = npy.read_magic(fh)
                    header = npy.read_array_header_1_0 if version == (1, 0) else npy.read_array_header_2_0
                    shape, _, dtype = header(fh)
                declared += int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    except ValueError as exc:  # a member that is not an .npy array
        raise DataError(f"{path} is not a readable .npz ({exc})") from None
    if declared > NPZ_INFLATION * size:
        raise DataError(f"{path}: its arrays declare {declared:,} bytes in a file of {size:,} bytes (more than "
                        f"{NPZ_INFLATION}x); refused before inflating them")


def _read_npz(path: Path) -> dict[str, tuple[object, object, Path]]:
    try:
        _npz_bounded(path)
        with np.load(path, allow_pickle=False) as npz:
            arrays = {name: npz[name] for name in npz.files}
    except ValueError as exc:  # an object array needs pickle
        raise DataError(f"{path}: cannot be read without pickle ({exc}); save plain numeric arrays with "
                        f"np.savez(X_train=..., y_train=..., X_test=..., y_test=...)") from None
    except (OSError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"{path} is not a readable .npz ({exc})") from None
    missing = [n for n in ("X_train", "y_train", "X_test", "y_test") if n not in arrays]
    if missing:
        raise DataError(f"{path}: arrays {', '.join(missing)} missing (it has {', '.join(arrays) or 'none'}); "
                        f"expected X_train, y_train, X_test, y_test [, X_val, y_val]")
    splits = ("train", "val", "test") if "X_val" in arrays and "y_val" in arrays else ("train", "test")
    return {s: (arrays[f"X_{s}"], arrays[f"y_{s}"], path) for s in splits}


def check_split(
    split: str, X: object, y: object, source: Path, *,
    positive_band: tuple[float, float] = POSITIVE_BAND, time_steps: int = TIME_STEPS,
) -> tuple[np.ndarray, np.ndarray]:
    """X as float32 (n, time_steps, 76) and y as int64 0/1, or a DataError saying what is wrong."""
    where = f"{source} ({split})"
    _bounded(split, X, y, source)
    try:
        x = np.asarray(X)
        labels = np.asarray(y)
    except ValueError as exc:  # ragged nested lists
        raise DataError(f"{where}: X or y is not a rectangular array ({exc})") from None
    if x.dtype.kind not in "fiub":
        raise DataError(f"{where}: X has dtype {x.dtype}, expected floats (the benchmark's discretised, "
                        f"normalised values)")
    if x.ndim != 3 or x.shape[1:] != (time_steps, N_FEATURES) or len(x) == 0:
        raise DataError(f"{where}: X has shape {x.shape}, expected (n, {time_steps}, {N_FEATURES}) with n > 0: "
                        f"{time_steps} hourly steps x {N_FEATURES} discretizer columns (masks included)")
    if labels.shape != (len(x),):
        raise DataError(f"{where}: y has shape {labels.shape}, expected ({len(x)},), one label per row of X")
    if labels.dtype.kind not in "fiub" or not np.isin(labels, (0, 1)).all():
        values = np.unique(labels)[:10] if labels.dtype.kind in "fiub" else labels.dtype
        raise DataError(f"{where}: labels must be binary 0/1 (in-hospital mortality); found {values}")
    x = x.astype(np.float32, copy=False)
    bad = ~np.isfinite(x)
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        raise DataError(f"{where}: {int(bad.sum())} values of X are NaN or infinite (first at [sample, hour, "
                        f"column] {list(first)}); the benchmark's discretizer imputes and its normalizer "
                        f"rescales every value, so the arrays were not produced as described")
    rate = float(labels.mean())
    low, high = positive_band
    if not low <= rate <= high:
        raise DataError(f"{where}: {rate:.1%} positive labels, outside the plausible band {low:.0%}-{high:.0%} "
                        f"(the benchmark has about 13%): are the labels inverted or from another task?")
    return x, labels.astype(np.int64)


def prepare_mimic3_ihm(
    raw_dir: Path, out_path: Path, *, positive_band: tuple[float, float] = POSITIVE_BAND,
) -> dict[str, dict[str, float]]:
    """Check the user's files in `raw_dir` and write data/prepared/mimic3_ihm.npz (atomically).
    Returns per split its rows and positive rate (also logged)."""
    arrays, summary = {}, {}
    for split, (X, y, source) in read_raw(raw_dir).items():
        x, labels = check_split(split, X, y, source, positive_band=positive_band)
        arrays[f"x_{split}"], arrays[f"y_{split}"] = x, labels
        summary[split] = {"rows": len(x), "positive_rate": float(labels.mean())}
        expected = PAPER_ROWS.get(split)
        log.info("%s %s: %d rows (the paper: %s), %.2f%% positive", KEY, split, len(x), expected,
                 100 * labels.mean())
    atomic.write_npz(out_path, arrays)
    return summary


def pool_time(x: np.ndarray, factor: int) -> np.ndarray:
    """Mean over blocks of `factor` consecutive time steps: (n, T, D) -> (n, T / factor, D)
    (docs/papers/tdcd.md R23: the quick scale pools 48 -> 12). Masks become the fraction of observed
    hours in the block."""
    n, steps, d = x.shape
    if factor < 1 or steps % factor:
        raise DataError(f"cannot mean-pool {steps} time steps in blocks of {factor}")
    return x.reshape(n, steps // factor, factor, d).mean(axis=2, dtype=np.float32)
