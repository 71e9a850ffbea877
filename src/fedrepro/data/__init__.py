"""Datasets: where they come from (registry), fetching and verifying them (download),
safe archive extraction (extract), and decoding them once into arrays (prepare)."""

from typing import Any

from fedrepro.errors import DataError
from fedrepro.data.extract import extract_tar
from fedrepro.data.mirror import MIRROR_ENV, absolute_mirror_env
from fedrepro.data.prepare import load_prepared, prepare_dataset
from fedrepro.data.registry import REGISTRY, Checksum, Dataset, RemoteFile, get_dataset

__all__ = [
    "MIRROR_ENV",
    "REGISTRY",
    "Checksum",
    "DataError",
    "Dataset",
    "RemoteFile",
    "absolute_mirror_env",
    "extract_tar",
    "fetch_dataset",
    "get_dataset",
    "load_prepared",
    "prepare_dataset",
    "resolve_mirror",
]

# Fetching is loaded on first use: pooch and requests cost ~0.1 s of start-up in every training job,
# which reads prepared data only.
_DOWNLOAD_NAMES = ("fetch_dataset", "resolve_mirror")


def __getattr__(name: str) -> Any:
    if name in _DOWNLOAD_NAMES:
        from fedrepro.data import download

        return getattr(download, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
