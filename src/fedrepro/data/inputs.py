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
from fedrepro.data.registry import PROVENANCE_NAME, RAW_DIR
from fedrepro.data.sources import USER_DATASETS
from fedrepro.data.views import view_name

# the user's multi-view renders and their stand-in
MULTIVIEW_DATASETS = (multiview.KEY, USER_DATASETS[multiview.KEY].stand_in.key)
PREPARED_DIR = "data/prepared"


def provenance_path(dataset: str) -> str:
    """data/raw/<dataset>/PROVENANCE.json: where a dataset came from (a download, the user's files, a generator)."""
    return f"{RAW_DIR}/{dataset}/{PROVENANCE_NAME}"


def npz_path(name: str) -> str:
    """data/prepared/<name>.npz (the workflow's patterns give a wildcard: "{dataset}")."""
    return f"{PREPARED_DIR}/{name}.npz"


def folder_path(name: str) -> str:
    """data/prepared/<name>, a multi-view dataset's folder."""
    return f"{PREPARED_DIR}/{name}"


def prepared_name(spec: dict[str, Any]) -> str:
    """The name of the run's prepared input under data/prepared/ (no extension)."""
    dataset = spec["dataset"]
    if dataset in MULTIVIEW_DATASETS:
        return multiview.prepared_name(dataset, spec.get("image_channels", 1), spec.get("image_side", 16))
    return view_name(dataset, spec["view"]) if "view" in spec else dataset


def prepared_path(spec: dict[str, Any]) -> str:
    """data/prepared/<name>.npz, or the folder data/prepared/<name> for a multi-view dataset."""
    return (folder_path if spec["dataset"] in MULTIVIEW_DATASETS else npz_path)(prepared_name(spec))


def load_input(path: Path) -> dict[str, Any]:
    """A prepared input: the arrays of an .npz, or a multi-view folder's memmaps (and its meta)."""
    path = Path(path)
    return multiview.load_multiview(path) if path.is_dir() else load_prepared(path)
