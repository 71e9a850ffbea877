"""Which data a TDCD run reads: the user's real data when it is there, otherwise a synthetic stand-in.

MIMIC-III and the ModelNet40 renders cannot be downloaded by the pipeline (credentialed access; not in
the dataset mirror), so the user places them under data/raw/<key>/. `resolve_source` says whether they
are present and otherwise names the stand-in and a label for run records, captions and the ledger.
CIFAR-10 is downloaded (or copied from the mirror) like the other datasets; its split-pair stand-in is
used only where a configuration asks for it.

Prepared outputs (what a run loads):
  mimic3_ihm, synthetic_ihm          data/prepared/<key>.npz           (prepare.load_prepared)
  cifar10, cifar10_splitpair         data/prepared/<key>-<view>.npz    (views.py: tdcd, tdcd_pool2)
  modelnet40_12view                  data/prepared/modelnet40_12view_<rgb|gray><side>/  (multiview.load_multiview)
  synthetic_12view                   data/prepared/synthetic_12view_gray<side>/
Each also has data/raw/<key>/PROVENANCE.json, as downloaded datasets do, which run.json copies: the
user's files with their sha256 (source "user"), or the stand-in's generator and parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fedrepro.data import mimic3_ihm, multiview
from fedrepro.data.registry import PROVENANCE_NAME, RAW_DIR
from fedrepro.errors import DataError
from fedrepro.utils.atomic import write_json, write_text
from fedrepro.utils.digest import file_sha256


@dataclass(frozen=True)
class StandIn:
    key: str
    label: str  # for captions, run records and the ledger


@dataclass(frozen=True)
class UserDataset:
    key: str
    label: str
    stand_in: StandIn
    how_to_provide: str


USER_DATASETS: dict[str, UserDataset] = {
    "mimic3_ihm": UserDataset(
        "mimic3_ihm", "MIMIC-III in-hospital mortality (user-provided)",
        StandIn("synthetic_ihm", "synthetic-IHM stand-in (MIMIC-III not provided)"), mimic3_ihm.HOW_TO_PROVIDE),
    "modelnet40_12view": UserDataset(
        "modelnet40_12view", "ModelNet40 12-view renders (user-provided)",
        StandIn("synthetic_12view", "synthetic 12-view stand-in (ModelNet40 renders not provided)"),
        multiview.HOW_TO_PROVIDE),
}
# Stand-ins by key (CIFAR-10 is always obtainable; its stand-in is chosen by configuration, never by absence).
STAND_INS: dict[str, StandIn] = {
    **{d.stand_in.key: d.stand_in for d in USER_DATASETS.values()},
    "cifar10_splitpair": StandIn("cifar10_splitpair", "split-pair CIFAR stand-in (synthetic)"),
}
_PRESENT = {"mimic3_ihm": mimic3_ihm.is_provided, "modelnet40_12view": multiview.is_provided}


@dataclass(frozen=True)
class DataSource:
    requested: str  # the dataset the paper uses
    key: str  # what the run prepares and reads: the requested key, or its stand-in's
    real: bool
    label: str
    note: str  # empty for real data; how to provide it otherwise


def resolve_source(key: str, raw_root: Path | str = RAW_DIR) -> DataSource:
    """The user's data for `key` if present under raw_root/<key>/, else its synthetic stand-in."""
    if key not in USER_DATASETS:
        raise DataError(f"{key!r} is not a user-provided dataset; known: {', '.join(USER_DATASETS)}")
    dataset = USER_DATASETS[key]
    if _PRESENT[key](Path(raw_root) / key):
        return DataSource(key, key, True, dataset.label, "")
    return DataSource(key, dataset.stand_in.key, False, dataset.stand_in.label, dataset.how_to_provide)


def write_user_provenance(key: str, raw_root: Path | str = RAW_DIR) -> dict[str, Any]:
    """data/raw/<key>/PROVENANCE.json for the user's files, in download.py's record format. ModelNet40's
    ~150k PNGs are listed with their sha256 in FILES.sha256 beside it, and the record names that list."""
    raw_dir = Path(raw_root) / key
    if key in _PRESENT and not _PRESENT[key](raw_dir):
        raise DataError(f"{USER_DATASETS[key].label}: not found under {raw_dir}. {USER_DATASETS[key].how_to_provide}")
    if key == "mimic3_ihm":
        files = mimic3_ihm.raw_files(raw_dir)
    elif key == "modelnet40_12view":
        files = [_write_tree_listing(raw_dir)]
    else:
        raise DataError(f"{key!r} is not a user-provided dataset; known: {', '.join(USER_DATASETS)}")
    record = {"dataset": key, "files": [
        {"name": path.name, "sha256": file_sha256(path), "bytes": path.stat().st_size, "source": "user",
         "origin": str(path), "verified_by": "fedrepro content checks when prepared"} for path in files]}
    write_json(raw_dir / PROVENANCE_NAME, record)
    return record


def _write_tree_listing(raw_dir: Path) -> Path:
    root = raw_dir / "classes"
    lines = [f"{file_sha256(p)}  {p.relative_to(raw_dir).as_posix()}"
             for p in sorted(root.rglob("*"), key=lambda q: q.relative_to(raw_dir).as_posix())
             if p.is_file() and p.suffix.lower() == ".png"]
    target = raw_dir / "FILES.sha256"
    write_text(target, "".join(line + "\n" for line in lines))
    return target


_GENERATORS = {"cifar10_splitpair": "fedrepro.data.synthetic.split_pair_cifar",
               "synthetic_ihm": "fedrepro.data.synthetic.synthetic_ihm",
               "synthetic_12view": "fedrepro.data.synthetic.twelve_view_batches"}


def generator_defaults(key: str) -> dict[str, Any]:
    """The keyword defaults of a stand-in's generator (what `synthesize` uses unless the rule sets them; a
    multi-view folder's own side and sizes are in its meta.json)."""
    import importlib
    import inspect

    module, _, name = _GENERATORS[key].rpartition(".")
    signature = inspect.signature(getattr(importlib.import_module(module), name))
    return {k: p.default for k, p in signature.parameters.items()
            if p.default is not inspect.Parameter.empty and k != "seed"}


def write_standin_provenance(key: str, raw_root: Path | str = RAW_DIR, seed: int | None = None) -> dict[str, Any]:
    """data/raw/<stand-in>/PROVENANCE.json: no files; the label, the generator and its data seed (sizes and
    image side are in the prepared file's name or meta)."""
    from fedrepro.data.synthetic import SEED

    if key not in STAND_INS:
        raise DataError(f"unknown stand-in {key!r}; known: {', '.join(STAND_INS)}")
    record = {"dataset": key, "files": [], "synthetic": {
        "label": STAND_INS[key].label, "generator": _GENERATORS[key], "seed": SEED if seed is None else seed,
        "params": generator_defaults(key)}}
    write_json(Path(raw_root) / key / PROVENANCE_NAME, record)
    return record


def prepare_user_dataset(key: str, raw_root: Path | str, out: Path | str, **options: Any) -> Any:
    """Check and decode the user's data: mimic3_ihm -> out (.npz); modelnet40_12view -> out (folder;
    options side=, channels=)."""
    raw_dir = Path(raw_root) / key
    if key == "mimic3_ihm":
        return mimic3_ihm.prepare_mimic3_ihm(raw_dir, Path(out), **options)
    if key == "modelnet40_12view":
        return multiview.prepare_modelnet40_12view(raw_dir, Path(out), **options)
    raise DataError(f"{key!r} is not a user-provided dataset; known: {', '.join(USER_DATASETS)}")


def synthesize(key: str, out: Path | str, **params: Any) -> dict[str, Any]:
    """Generate a stand-in: cifar10_splitpair, synthetic_ihm -> out (.npz); synthetic_12view -> out (folder;
    params side=, n_train=, n_test=, seed=). Defaults: the paper's sizes and synthetic.SEED."""
    from fedrepro.data import synthetic

    if key == "synthetic_12view":
        return synthetic.write_twelve_view(Path(out), **params)
    if key in STAND_INS:
        return synthetic.write_npz_standin(key, Path(out), **params)
    raise DataError(f"unknown stand-in {key!r}; known: {', '.join(STAND_INS)}")
