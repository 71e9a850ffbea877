"""Test instruments for the partitions of fedrepro.data.partitions: the composition of a partition
(per device, per cluster) and device_partition followed by rho_cluster_clusters in one call."""

from __future__ import annotations

import numpy as np

from fedrepro.data.partitions import device_partition, rho_cluster_clusters


def cluster_partition(
    labels: np.ndarray,
    *,
    n_devices: int = 1000,
    samples_per_device: int = 500,
    n_clusters: int = 10,
    rho_cluster: float,
    rng: np.random.Generator,
    rho_device: float = 0.5,
    n_classes: int = 10,
    remainder: str = "balanced",
) -> tuple[np.ndarray, np.ndarray]:
    """Paper IV-E: (indices (n_devices, samples_per_device), clusters (M, n_devices // M)).

    The devices are exactly ``device_partition(..., rng=rng)``'s for the same Generator state
    (so FedAvg at the same seed sees the same data); the clusters are drawn afterwards from the same
    Generator (the engine draws them from a stream of their own). rho_cluster_clusters rejects
    n_clusters != n_classes and a rho_cluster outside [0, 1].
    """
    indices, majors = device_partition(
        labels,
        n_devices=n_devices,
        samples_per_device=samples_per_device,
        rho_device=rho_device,
        n_classes=n_classes,
        rng=rng,
        remainder=remainder,
        return_majors=True,
    )
    return indices, rho_cluster_clusters(majors, n_clusters, rho_cluster, rng)


def cluster_major_counts(clusters: np.ndarray, majors: np.ndarray, n_classes: int) -> np.ndarray:
    """(M, n_classes): number of devices of each major class in each cluster."""
    clusters = np.asarray(clusters)
    majors = np.asarray(majors, dtype=np.int64)
    out = np.zeros((clusters.shape[0], n_classes), dtype=np.int64)
    for m, row in enumerate(clusters):
        out[m] = np.bincount(majors[row], minlength=n_classes)
    return out


def partition_summary(
    indices: np.ndarray,
    labels: np.ndarray,
    clusters: np.ndarray | None = None,
    *,
    n_classes: int | None = None,
    majors: np.ndarray | None = None,
) -> dict:
    """Class composition per device (and per cluster).

    Arrays: ``device_class_counts``/``device_class_fractions`` (n, C); ``class_totals`` (C,);
    ``image_multiplicity`` (len(labels),) how many device slots hold each training image.
    Scalars: ``n_devices``, ``samples_per_device``, ``n_classes``, ``unique_images``,
    ``max_reuse``, ``device_tv_mean`` (mean total-variation distance of the devices' class
    distributions from the pooled one; 0 for IID devices). With ``majors``:
    ``device_major_fraction`` (n,). With ``clusters``: ``cluster_sizes``,
    ``cluster_class_counts``/``cluster_class_fractions`` (M, C), ``cluster_tv_mean``
    (always <= device_tv_mean: TV is convex), and with majors also
    ``cluster_major_device_counts`` (M, C).
    """
    indices = np.asarray(indices)
    labels = np.asarray(labels)
    if indices.ndim != 2:
        raise ValueError(f"indices must be 2-D (devices, samples), got shape {indices.shape}")
    if indices.size and (indices.min() < 0 or indices.max() >= labels.size):
        raise ValueError("indices out of range of labels")
    C = int(labels.max()) + 1 if n_classes is None else int(n_classes)
    n, m = indices.shape
    dev_labels = labels[indices]
    counts = np.zeros((n, C), dtype=np.int64)
    np.add.at(counts, (np.repeat(np.arange(n), m), dev_labels.ravel()), 1)
    frac = counts / m
    pooled = counts.sum(axis=0) / counts.sum()
    mult = np.bincount(indices.ravel(), minlength=labels.size)
    out: dict = {
        "n_devices": n,
        "samples_per_device": m,
        "n_classes": C,
        "device_class_counts": counts,
        "device_class_fractions": frac,
        "class_totals": counts.sum(axis=0),
        "image_multiplicity": mult,
        "unique_images": int(np.count_nonzero(mult)),
        "max_reuse": int(mult.max()),
        "device_tv_mean": float(0.5 * np.abs(frac - pooled).sum(axis=1).mean()),
    }
    if majors is not None:
        majors = np.asarray(majors, dtype=np.int64)
        out["device_major_fraction"] = frac[np.arange(n), majors]
    if clusters is not None:
        clusters = np.asarray(clusters)
        if clusters.ndim != 2:
            raise ValueError(f"clusters must be 2-D (M, devices per cluster), got shape {clusters.shape}")
        ccounts = np.stack([counts[row].sum(axis=0) for row in clusters])
        cfrac = ccounts / ccounts.sum(axis=1, keepdims=True)
        out["cluster_sizes"] = np.array([row.size for row in clusters], dtype=np.int64)
        out["cluster_class_counts"] = ccounts
        out["cluster_class_fractions"] = cfrac
        out["cluster_tv_mean"] = float(0.5 * np.abs(cfrac - pooled).sum(axis=1).mean())
        if majors is not None:
            out["cluster_major_device_counts"] = cluster_major_counts(clusters, majors, C)
    return out
