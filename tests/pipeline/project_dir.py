"""A throwaway project directory for commands that train from config/ and data/prepared/ (studies, tunings):
the repository's configs, one tiny prepared array file and its dataset's provenance record."""

import json
import shutil
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1].parent


def make_project(root: Path, dataset: str, prepared: str, shape: tuple[int, ...], per_class: int) -> Path:
    """root/config (a copy), root/data/prepared/<prepared>.npz (10 classes x per_class samples of `shape`,
    separable by a class offset; every third one the test set) and root/data/raw/<dataset>/PROVENANCE.json."""
    shutil.copytree(REPO / "config", root / "config")
    (root / "data" / "prepared").mkdir(parents=True)
    (root / "data" / "raw" / dataset).mkdir(parents=True)
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(10), per_class)
    x = (rng.normal(size=(len(y), *shape)) + y.reshape(-1, *[1] * len(shape)) / 5).astype(np.float32)
    np.savez(root / "data" / "prepared" / f"{prepared}.npz", x_train=x, y_train=y, x_test=x[::3], y_test=y[::3],
             mean=np.zeros(shape[0]), std=np.ones(shape[0]))
    (root / "data" / "raw" / dataset / "PROVENANCE.json").write_text(json.dumps({"dataset": dataset, "files": [
        {"name": dataset, "sha256": "ab" * 32, "bytes": 1, "source": "mirror", "origin": dataset,
         "verified_by": "mirror-manifest"}]}))
    return root
