"""Datasets: where they come from (registry), fetching and verifying them (download),
safe archive extraction (extract), and decoding them once into arrays (prepare)."""

from fedrepro.data.download import MIRROR_ENV, fetch_dataset, resolve_mirror
from fedrepro.errors import DataError
from fedrepro.data.extract import extract_tar
from fedrepro.data.prepare import load_prepared, prepare_dataset
from fedrepro.data.registry import REGISTRY, Checksum, Dataset, RemoteFile, get_dataset

__all__ = [
    "MIRROR_ENV",
    "REGISTRY",
    "Checksum",
    "DataError",
    "Dataset",
    "RemoteFile",
    "extract_tar",
    "fetch_dataset",
    "get_dataset",
    "load_prepared",
    "prepare_dataset",
    "resolve_mirror",
]
