"""The registry's row counts, which start-up checks runs against without the data, are the ones
prepare.py finds in the canonical files."""

from fedrepro.data import prepare
from fedrepro.data.registry import REGISTRY


def test_registry_rows_are_the_training_rows_prepare_checks():
    classes = {"mnist": prepare._MNIST_CLASSES, "fashion_mnist": prepare._FASHION_MNIST_CLASSES,
               "cifar10": prepare._CIFAR10_CLASSES}
    for key, counts in classes.items():
        assert REGISTRY[key].rows == sum(counts["train"]), key
    assert REGISTRY["insurance"].rows == prepare.INSURANCE_ROWS == 1338
    for key, rows in (("a9a", 32561), ("w8a", 49749)):  # prepare checks the LIBSVM files against these
        assert prepare._DECODERS[key].args[0][key][1] == REGISTRY[key].rows == rows
    assert all(d.rows for d in REGISTRY.values())
