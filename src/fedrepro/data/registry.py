"""Where each dataset comes from and how to recognise its bytes.

One entry per dataset the papers use. Every file lists its canonical URL first, then
official mirrors serving the same bytes, its published checksum (None where the
publisher gives none), its size, and its path in the offline mirror layout
(`<mirror>/<mirror_path>`, described by the mirror's MANIFEST.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from fedrepro.errors import DataError

# Where each dataset's raw files lie (data/raw/<key>/), and what its directory records of where they came from
# (download.py, sources.py).
RAW_DIR = "data/raw"
PROVENANCE_NAME = "PROVENANCE.json"

ChecksumAlgo = Literal["md5", "sha256"]


@dataclass(frozen=True)
class Checksum:
    algo: ChecksumAlgo
    value: str


@dataclass(frozen=True)
class RemoteFile:
    name: str  # file name under raw_root/<dataset>/
    urls: tuple[str, ...]  # tried in order
    mirror_path: str  # relative to the mirror root
    checksum: Checksum | None  # as published by the data's maintainers
    size: int | None  # bytes of the canonical file, when known


@dataclass(frozen=True)
class Dataset:
    key: str
    files: tuple[RemoteFile, ...]
    homepage: str
    licence: str
    citation: str
    rows: int | None = None  # training examples (prepare.py checks them): what runs split among clients


def _idx_files(
    bases: tuple[str, ...], mirror_dir: str, md5s: dict[str, str], sizes: dict[str, int]
) -> tuple[RemoteFile, ...]:
    return tuple(
        RemoteFile(
            name=name,
            urls=tuple(base + name for base in bases),
            mirror_path=f"{mirror_dir}/{name}",
            checksum=Checksum("md5", md5),
            size=sizes[name],
        )
        for name, md5 in md5s.items()
    )


# MD5s as listed in torchvision/datasets/mnist.py (MNIST.resources). The ossci-datasets
# bucket is the mirror torchvision falls back to; it serves the same bytes. It comes
# first because yann.lecun.com has been answering scripted downloads with HTTP 403.
_MNIST = Dataset(
    key="mnist",
    files=_idx_files(
        bases=("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/"),
        mirror_dir="mnist",
        md5s={
            "train-images-idx3-ubyte.gz": "f68b3c2dcbeaaa9fbdd348bbdeb94873",
            "train-labels-idx1-ubyte.gz": "d53e105ee54ea40749a09fcbcd1e9432",
            "t10k-images-idx3-ubyte.gz": "9fb629c4189551a2d022fa330f9573f3",
            "t10k-labels-idx1-ubyte.gz": "ec29112dd5afa0611ce80d1b7f02629c",
        },
        sizes={
            "train-images-idx3-ubyte.gz": 9912422,
            "train-labels-idx1-ubyte.gz": 28881,
            "t10k-images-idx3-ubyte.gz": 1648877,
            "t10k-labels-idx1-ubyte.gz": 4542,
        },
    ),
    homepage="http://yann.lecun.com/exdb/mnist/",
    licence="no formal licence; customary research use",
    citation=(
        "Y. LeCun, L. Bottou, Y. Bengio, P. Haffner. Gradient-based learning applied to "
        "document recognition. Proceedings of the IEEE 86(11):2278-2324, 1998."
    ),
    rows=60000,
)

# MD5s from the "Get the Data" table of the zalandoresearch/fashion-mnist README (the
# same values appear in torchvision's FashionMNIST.resources). The GitHub repository
# ships the same files under data/fashion/.
_FASHION_MNIST = Dataset(
    key="fashion_mnist",
    files=_idx_files(
        bases=(
            "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
            "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
        ),
        mirror_dir="fashion-mnist",
        md5s={
            "train-images-idx3-ubyte.gz": "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
            "train-labels-idx1-ubyte.gz": "25c81989df183df01b3e8a0aad5dffbe",
            "t10k-images-idx3-ubyte.gz": "bef4ecab320f06d8554ea6380940ec79",
            "t10k-labels-idx1-ubyte.gz": "bb300cfdad3c16e7a12a480ee83cd310",
        },
        sizes={
            "train-images-idx3-ubyte.gz": 26421880,
            "train-labels-idx1-ubyte.gz": 29515,
            "t10k-images-idx3-ubyte.gz": 4422102,
            "t10k-labels-idx1-ubyte.gz": 5148,
        },
    ),
    homepage="https://github.com/zalandoresearch/fashion-mnist",
    licence="MIT",
    citation=(
        "H. Xiao, K. Rasul, R. Vollgraf. Fashion-MNIST: a Novel Image Dataset for "
        "Benchmarking Machine Learning Algorithms. arXiv:1708.07747, 2017."
    ),
    rows=60000,
)

# MD5 as listed in torchvision/datasets/cifar.py (CIFAR10.tgz_md5).
_CIFAR10 = Dataset(
    key="cifar10",
    files=(
        RemoteFile(
            name="cifar-10-python.tar.gz",
            urls=("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
            mirror_path="cifar-10/cifar-10-python.tar.gz",
            checksum=Checksum("md5", "c58f30108f718f92721af3b95e74349a"),
            size=170498071,
        ),
    ),
    homepage="https://www.cs.toronto.edu/~kriz/cifar.html",
    licence="no formal licence; customary research use",
    citation=(
        "A. Krizhevsky. Learning Multiple Layers of Features from Tiny Images. "
        "Technical report, University of Toronto, 2009."
    ),
    rows=50000,
)

# LIBSVM publishes no checksums for its data sets: checksum=None. The sizes are those of
# the files on the LIBSVM page; prepare.py checks row counts and label counts instead.
_LIBSVM_BINARY = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary/"
_LIBSVM_CITATION = (
    "C.-C. Chang, C.-J. Lin. LIBSVM: a library for support vector machines. ACM TIST "
    "2(3):27, 2011. J. C. Platt. Fast training of support vector machines using "
    "sequential minimal optimization. In Advances in Kernel Methods, MIT Press, 1998."
)


def _libsvm_file(name: str, size: int) -> RemoteFile:
    return RemoteFile(
        name=name,
        urls=(_LIBSVM_BINARY + name,),
        mirror_path=f"libsvm/{name}",
        checksum=None,
        size=size,
    )


_A9A = Dataset(
    key="a9a",
    files=(_libsvm_file("a9a", 2329875), _libsvm_file("a9a.t", 1164628)),
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#a9a",
    licence="derived from the UCI Adult data set (CC BY 4.0)",
    citation=_LIBSVM_CITATION + " R. Kohavi, B. Becker. Adult. UCI Machine Learning Repository, 1996.",
    rows=32561,
)

_W8A = Dataset(
    key="w8a",
    files=(_libsvm_file("w8a", 3478239),),
    homepage="https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/binary.html#w8a",
    licence="no licence stated (LIBSVM data collection); research use",
    citation=_LIBSVM_CITATION,
    rows=49749,
)

# No checksum is published for insurance.csv: checksum=None. Public copies differ in
# line endings, so neither a hash nor a size identifies it; prepare.py checks the parsed
# content (header, 1338 rows, sum of charges) instead.
_INSURANCE = Dataset(
    key="insurance",
    files=(
        RemoteFile(
            name="insurance.csv",
            urls=(
                "https://raw.githubusercontent.com/stedy/Machine-Learning-with-R-datasets/master/insurance.csv",
            ),
            mirror_path="insurance/insurance.csv",
            checksum=None,
            size=None,
        ),
    ),
    homepage="https://github.com/stedy/Machine-Learning-with-R-datasets",
    licence="public domain (stedy/Machine-Learning-with-R-datasets README); ODbL on Kaggle",
    citation="B. Lantz. Machine Learning with R. Packt Publishing, 2013.",
    rows=1338,
)

REGISTRY: dict[str, Dataset] = {d.key: d for d in (_MNIST, _FASHION_MNIST, _CIFAR10, _A9A, _W8A, _INSURANCE)}


def get_dataset(key: str) -> Dataset:
    try:
        return REGISTRY[key]
    except KeyError:
        raise DataError(f"unknown dataset {key!r}; known: {', '.join(sorted(REGISTRY))}") from None
