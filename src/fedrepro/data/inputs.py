"""Which prepared file or folder a run reads, and loading it (one rule for the run table and the engines).

  a multi-view dataset (modelnet40_12view, synthetic_12view)   data/prepared/<key>_<rgb|gray><side>/
      (folder of uint8 memmaps, multiview.py; the spec's `image_channels` and `image_side` choose it)
  a spec with a `view`                                          data/prepared/<dataset>-<view>.npz
  otherwise                                                     data/prepared/<dataset>.npz
The name without the extension is also the run's key in the engine's data (rule train passes
{name: path}).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fedrepro.data import multiview
from fedrepro.data.prepare import load_prepared
from fedrepro.data.views import view_name

MULTIVIEW_DATASETS = ("modelnet40_12view", "synthetic_12view")
PREPARED_DIR = "data/prepared"


def prepared_name(spec: dict[str, Any]) -> str:
    """The name of the run's prepared input under data/prepared/ (no extension)."""
    dataset = spec["dataset"]
    if dataset in MULTIVIEW_DATASETS:
        return multiview.prepared_name(dataset, spec.get("image_channels", 1), spec.get("image_side", 16))
    return view_name(dataset, spec["view"]) if "view" in spec else dataset


def prepared_path(spec: dict[str, Any]) -> str:
    """data/prepared/<name>.npz, or the folder data/prepared/<name> for a multi-view dataset."""
    name = prepared_name(spec)
    return f"{PREPARED_DIR}/{name}" if spec["dataset"] in MULTIVIEW_DATASETS else f"{PREPARED_DIR}/{name}.npz"


def load_input(path: Path) -> dict[str, Any]:
    """A prepared input: the arrays of an .npz, or a multi-view folder's memmaps (and its meta)."""
    path = Path(path)
    return multiview.load_multiview(path) if path.is_dir() else load_prepared(path)
