"""Multi-view image sets (ModelNet40 12-view, and its synthetic stand-in) as uint8 memory maps.

The user provides the MVCNN-style renders (docs/papers/tdcd.md R19; not in the dataset mirror) as
  data/raw/modelnet40_12view/classes/<class>/<train|test>/<object_id>/<12 PNG files>
Class labels are the sorted class folder names' indices. View files are sorted in natural order
(digits compared as numbers: `v2` before `v10`), so silo v is camera v for every object (the authors'
os.listdir order is filesystem-dependent: docs/papers/tdcd.md R11).

Prepared folder (the synthetic 12-view stand-in writes the same layout), e.g.
data/prepared/modelnet40_12view_rgb224/:
  views_train.npy   uint8 (n, 12, C, S, S), C = 3 (RGB) or 1 (grey), a .npy so it opens as a memmap
  labels_train.npy  int64 (n,)
  views_test.npy, labels_test.npy
  meta.json         {"dataset", "classes", "views", "channels", "side", "counts", ...}
Images are written one object at a time into the memmaps, never held in memory as float32 (the
train split at 3x224x224 is 17.8 GB as uint8). The folder is built under a temporary name and
renamed into place, so a reader never sees half of one.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from fedrepro.errors import DataError
from fedrepro.utils.atomic import DIR_MODE, FILE_MODE, temporary_sibling

KEY = "modelnet40_12view"
N_VIEWS = 12
SPLITS = ("train", "test")
HOW_TO_PROVIDE = (
    "To provide ModelNet40 12-view, download the MVCNN-style 12-view renders linked from the authors' "
    "README (github.com/rpi-nsl/TDCD) and place them as data/raw/modelnet40_12view/classes/<class>/"
    "<train|test>/<object_id>/<12 PNG files> (the authors' view/classes/ tree). Without them the pipeline "
    "uses the synthetic 12-view stand-in."
)


def prepared_name(key: str, channels: int, side: int) -> str:
    """The prepared folder's name under data/prepared/: <key>_<rgb|gray><side>."""
    return folder_name(key, CHANNEL_MODES[channels], side)


def folder_name(key: str, mode: str, side: int | str) -> str:
    """prepared_name by the folder's <rgb|gray> (the workflow's patterns give wildcards: "{mode}", "{side}")."""
    return f"{key}_{mode}{side}"


CHANNEL_MODES = {3: "rgb", 1: "gray"}  # image channels -> the prepared folder's <rgb|gray>


def _natural_key(name: str) -> list[object]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def sorted_views(folder: Path) -> list[Path]:
    """An object's PNG files in natural name order (camera 0 first)."""
    return sorted((p for p in folder.iterdir() if p.is_file() and p.suffix.lower() == ".png"),
                  key=lambda p: _natural_key(p.name))


def is_provided(raw_dir: Path) -> bool:
    return (Path(raw_dir) / "classes").is_dir()


def scan_tree(raw_dir: Path) -> tuple[list[str], dict[str, list[tuple[Path, int]]]]:
    """Class names and, per split, (object folder, label) in (class, natural object id) order; checks the
    layout (every class has both splits, every object 12 views) before any image is read."""
    root = Path(raw_dir) / "classes"
    if not root.is_dir():
        raise DataError(f"ModelNet40 12-view renders not found: {root} is not a directory. {HOW_TO_PROVIDE}")
    classes = sorted(p.name for p in root.iterdir() if p.is_dir())
    if not classes:
        raise DataError(f"{root} holds no class folders. {HOW_TO_PROVIDE}")
    objects: dict[str, list[tuple[Path, int]]] = {split: [] for split in SPLITS}
    for label, name in enumerate(classes):
        before = sum(len(found) for found in objects.values())
        for split in SPLITS:
            folder = root / name / split
            if not folder.is_dir():
                raise DataError(f"class {name!r}: {folder} is missing; each class folder needs both "
                                f"{' and '.join(SPLITS)} subfolders")
            for obj in sorted((p for p in folder.iterdir() if p.is_dir()), key=lambda p: _natural_key(p.name)):
                count = len(sorted_views(obj))
                if count != N_VIEWS:
                    raise DataError(f"{obj}: {count} PNG views, expected {N_VIEWS} (one per 30-degree camera)")
                objects[split].append((obj, label))
        if sum(len(found) for found in objects.values()) == before:
            raise DataError(f"class {name!r} under {root} has no objects")
    return classes, objects


def read_view(path: Path, channels: int, side: int) -> np.ndarray:
    """One PNG as uint8 (channels, side, side): RGB (as the authors' convert('RGB')) or grey, resized
    with a bilinear filter (deterministic; the authors' one-off random crop is not reproduced)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            img = img.convert("RGB" if channels == 3 else "L")
            if img.size != (side, side):
                img = img.resize((side, side), Image.Resampling.BILINEAR)
            array = np.asarray(img, dtype=np.uint8)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise DataError(f"{path}: not a readable PNG image ({type(exc).__name__}: {exc})") from None
    return array.transpose(2, 0, 1) if channels == 3 else array[None]


class MultiviewWriter:
    """Fills views_<split>.npy / labels_<split>.npy in a temporary folder; `commit` renames it into place."""

    def __init__(self, tmp_dir: Path) -> None:
        self.dir = tmp_dir
        self.counts: dict[str, int] = {}

    def open_split(self, split: str, n: int, channels: int, side: int, views: int = N_VIEWS) -> np.memmap:
        self.counts[split] = n
        return np.lib.format.open_memmap(self.dir / f"views_{split}.npy", mode="w+", dtype=np.uint8,
                                         shape=(n, views, channels, side, side))

    def write_labels(self, split: str, labels: np.ndarray) -> None:
        np.save(self.dir / f"labels_{split}.npy", np.asarray(labels, dtype=np.int64))


@contextmanager
def multiview_writer(out_dir: Path, meta: dict[str, Any]) -> Iterator[MultiviewWriter]:
    """Build the prepared folder `out_dir` atomically: on success its meta.json (meta plus the split
    counts) is written last and the folder renamed into place; on failure nothing is left behind."""
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_sibling(out_dir, directory=True)
    try:
        writer = MultiviewWriter(tmp)
        yield writer
        (tmp / "meta.json").write_text(json.dumps({**meta, "counts": writer.counts}, indent=2, sort_keys=True))
        for path in tmp.iterdir():
            os.chmod(path, FILE_MODE)
        os.chmod(tmp, DIR_MODE)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(tmp, out_dir)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def prepare_modelnet40_12view(raw_dir: Path, out_dir: Path, *, side: int = 224, channels: int = 3) -> dict[str, int]:
    """Decode the user's renders under raw_dir/classes into the prepared folder `out_dir`. Returns the
    objects per split."""
    if channels not in CHANNEL_MODES:
        raise DataError(f"channels must be 3 (RGB) or 1 (grey), not {channels}")
    classes, objects = scan_tree(raw_dir)
    meta = {"dataset": KEY, "classes": classes, "views": N_VIEWS, "channels": channels, "side": side,
            "resize": "bilinear", "source": str(Path(raw_dir) / "classes"),
            "objects": {split: [f"{classes[lab]}/{split}/{obj.name}" for obj, lab in objects[split]]
                        for split in SPLITS}}
    with multiview_writer(out_dir, meta) as writer:
        for split in SPLITS:
            views = writer.open_split(split, len(objects[split]), channels, side)
            for i, (obj, _) in enumerate(objects[split]):
                for v, png in enumerate(sorted_views(obj)):
                    views[i, v] = read_view(png, channels, side)
            views.flush()
            del views
            writer.write_labels(split, np.array([lab for _, lab in objects[split]], dtype=np.int64))
    return {split: len(objects[split]) for split in SPLITS}


def load_multiview(folder: Path) -> dict[str, Any]:
    """x_train / x_test as read-only uint8 memmaps (n, views, C, S, S), y_train / y_test int64 arrays, and
    the folder's meta (dict)."""
    folder = Path(folder)
    try:
        meta = json.loads((folder / "meta.json").read_text())
        out: dict[str, Any] = {"meta": meta}
        for split in SPLITS:
            out[f"x_{split}"] = np.load(folder / f"views_{split}.npy", mmap_mode="r", allow_pickle=False)
            out[f"y_{split}"] = np.load(folder / f"labels_{split}.npy", allow_pickle=False)
    except FileNotFoundError as exc:
        raise DataError(f"{folder} is not a complete prepared multi-view folder ({exc.filename} missing); "
                        f"prepare it first") from None
    except ValueError as exc:
        raise DataError(f"{folder}: damaged prepared multi-view folder ({exc}); delete it and prepare again") from None
    for split in SPLITS:
        x, y = out[f"x_{split}"], out[f"y_{split}"]
        if x.ndim != 5 or len(x) != len(y):
            raise DataError(f"{folder}: views_{split}.npy has shape {x.shape} with {len(y)} labels, expected "
                            f"(n, views, C, S, S) and n labels; delete it and prepare again")
    return out
