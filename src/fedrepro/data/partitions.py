"""Client data partitions: FedCluster's (device and cluster levels) and DeFedAvg's (IID and k classes per client).

FedCluster partitions: device-level (rho_device) and cluster-level (rho_cluster) heterogeneity.

Paper: FedCluster (Chen et al., arXiv:2009.10748), Section IV-A and IV-E; our readings
docs/papers/fedcluster.md R4, R5 and R19. Every random choice comes from the
``numpy.random.Generator`` the caller passes (callers derive it from a hash of the
run/partition spec), so a partition is a pure function of (labels, arguments, seed).

Device level (``device_partition``), paper IV-A: n devices with m samples each; each of
the C classes is the *major class* of exactly n/C devices (``majors`` is
``repeat(arange(C), n/C)`` shuffled); rho_device of a device's samples come from its major
class and (1 - rho_device)/(C - 1) from each other class. Integer counts:

* ``n_major = floor(rho_device * m + 1/2)`` (round half up, with a 1e-9 guard against float
  noise), so ``|n_major/m - rho_device| <= 1/(2m)`` and ``n_major/m == rho_device`` exactly
  whenever ``rho_device * m`` is an integer (all the paper's values at m = 500 or 100);
* ``base, extra = divmod(m - n_major, C - 1)``: every minor class gets ``base`` samples and
  exactly ``extra`` of the C - 1 minor classes get one more (largest remainder, docs/papers/fedcluster.md R4).
  Which minors get the +1 (``remainder=``):

  - ``"balanced"`` (default): a random *balanced design*. Within each major group the +1s
    are spread over the minor classes as evenly as possible, with the same histogram (over
    offsets ``(c - major - 1) mod C``) in every group and random rows per device. This makes
    every class's total over all devices exactly ``n * m / C`` (50,000 for 1000 x 500) for
    every rho_device, the balance that paper IV-A's counts imply (100 x 500 rho + 900 x 500 (1 - rho)/9
    = 50,000 draws per class for every rho; it holds exactly only with such a design);
  - ``"random"``: the plain reading: each device independently picks which
    ``extra`` minors get +1. Class totals are then 50,000 only in expectation.

* Images are drawn without replacement *within* a device (uniformly among the class's
  images) and independently *across* devices, so images repeat across devices (500k draws
  from 50k/60k images, docs/papers/fedcluster.md R5). Each device's row is shuffled at the end, so the order
  of its indices carries no class information.

Clusters:

* ``random_clusters``: a uniformly random partition into M equal clusters (paper II,
  "random uniform clustering"); rows are sorted device ids.
* ``rho_cluster_clusters`` (paper IV-E; docs/papers/fedcluster.md R19): M = C clusters,
  cluster m is "assigned" major class m (row m of the result). It holds
  ``d = floor(rho_cluster * S + 1/2)`` devices whose major class is m (S = n/M devices per
  cluster) and ``base_c`` or ``base_c + 1`` devices of each other major class, with
  ``base_c, extra_c = divmod(S - d, M - 1)``; the ``extra_c`` +1 offsets are a random subset
  of ``1..M-1`` shared by all clusters (a circulant matrix), so every row and every column
  of the (cluster x device-major) count matrix sums to S = n/C: each device is used exactly
  once. Giving the +1 to the fixed offsets ``1..extra_c`` would prefer the next classes for no
  reason; a random subset is the same construction without that preference.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "REMAINDERS",
    "assign_majors",
    "class_group_partition",
    "class_groups",
    "device_class_counts",
    "device_partition",
    "iid_partition",
    "random_clusters",
    "rho_cluster_clusters",
    "rho_cluster_matrix",
    "round_half_up",
    "sample_device_indices",
]

REMAINDERS = ("balanced", "random")


# --- helpers ------------------------------------------------------------------------


def round_half_up(x: float) -> int:
    """floor(x + 1/2), robust to float noise such as 0.7 * 500 = 350.00000000000006."""
    return int(math.floor(x + 0.5 + 1e-9))


def _check_rho(name: str, rho: float) -> float:
    rho = float(rho)
    if not (0.0 <= rho <= 1.0):  # also rejects NaN
        raise ValueError(f"{name} must lie in [0, 1], got {rho}")
    return rho


def _check_positive_int(name: str, value: int, minimum: int = 1) -> int:
    if isinstance(value, bool) or int(value) != value:
        raise ValueError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if value < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    return value


def _check_generator(rng: object) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    return rng


def _check_labels(labels: np.ndarray, n_classes: int) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.ndim != 1:
        raise ValueError(f"labels must be 1-D, got shape {labels.shape}")
    if labels.size == 0:
        raise ValueError("labels is empty")
    if not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"labels must be integers, got dtype {labels.dtype}")
    lo, hi = int(labels.min()), int(labels.max())
    if lo < 0 or hi >= n_classes:
        raise ValueError(f"labels must lie in [0, {n_classes}), found values in [{lo}, {hi}]")
    return labels


# --- device level ----------------------------------------------------------------------


def assign_majors(n_devices: int, n_classes: int, rng: np.random.Generator) -> np.ndarray:
    """(n_devices,) int64 major classes, each class major for exactly n_devices / n_classes devices."""
    n_devices = _check_positive_int("n_devices", n_devices)
    n_classes = _check_positive_int("n_classes", n_classes, 2)
    if n_devices % n_classes:
        raise ValueError(
            f"n_devices={n_devices} is not divisible by n_classes={n_classes}: every class must be "
            "the major class of the same number of devices"
        )
    majors = np.repeat(np.arange(n_classes, dtype=np.int64), n_devices // n_classes)
    _check_generator(rng).shuffle(majors)
    return majors


def device_class_counts(
    majors: np.ndarray,
    *,
    samples_per_device: int,
    rho_device: float,
    n_classes: int,
    rng: np.random.Generator,
    remainder: str = "balanced",
) -> np.ndarray:
    """(n_devices, n_classes) int64 per-device class counts (see the module docstring)."""
    rho = _check_rho("rho_device", rho_device)
    m = _check_positive_int("samples_per_device", samples_per_device)
    C = _check_positive_int("n_classes", n_classes, 2)
    rng = _check_generator(rng)
    if remainder not in REMAINDERS:
        raise ValueError(f"remainder must be one of {REMAINDERS}, got {remainder!r}")
    majors = np.asarray(majors, dtype=np.int64)
    n = majors.size
    if majors.ndim != 1 or n == 0 or majors.min() < 0 or majors.max() >= C:
        raise ValueError(f"majors must be a non-empty 1-D array of classes in [0, {C})")

    n_major = round_half_up(rho * m)
    base, extra = divmod(m - n_major, C - 1)
    counts = np.full((n, C), base, dtype=np.int64)
    rows = np.arange(n)
    counts[rows, majors] = n_major
    if extra == 0:
        return counts

    if remainder == "random":
        keys = rng.random((n, C))
        keys[rows, majors] = np.inf  # the major class never gets a +1
        plus = np.argsort(keys, axis=1)[:, :extra]
        counts[rows[:, None], plus] += 1
        return counts

    # balanced design: offsets o = (c - major - 1) mod C in 0..C-2 name the minor classes.
    group_sizes = np.bincount(majors, minlength=C)
    if np.any(group_sizes != group_sizes[0]):
        raise ValueError("remainder='balanced' needs every class to be the major of equally many devices")
    G = int(group_sizes[0])
    q, r = divmod(G * extra, C - 1)  # q < G, so every offset's run below has length <= G
    hist = np.full(C - 1, q, dtype=np.int64)
    hist[rng.choice(C - 1, size=r, replace=False)] += 1  # same histogram in every group
    for c in range(C):
        members = np.flatnonzero(majors == c)
        if members.size == 0:
            continue
        order = rng.permutation(C - 1)
        slots = np.repeat(order, hist[order])  # runs of equal offsets, length G * extra
        # device g of the group takes slots g, g + G, g + 2G, ...: a run of length <= G never
        # hits the same device twice, so each device gets `extra` distinct minor classes.
        offsets = slots.reshape(extra, G).T  # (G, extra)
        devices = rng.permutation(members)
        plus = (c + 1 + offsets) % C
        counts[devices[:, None], plus] += 1
    return counts


def _distinct_positions(rng: np.random.Generator, pool_size: int, rows: int, k: int) -> np.ndarray:
    """(rows, k) positions in [0, pool_size), distinct within each row, each row a uniform k-subset.

    For k <= pool_size / 2: draw with replacement and redraw every repeated occurrence but the
    first until none is left. The procedure commutes with relabelling the pool, so each row's
    set is uniform over k-subsets. Otherwise: the k smallest of pool_size uniform keys.
    """
    if k == 0:
        return np.empty((rows, 0), dtype=np.int64)
    if 2 * k > pool_size:
        keys = rng.random((rows, pool_size))
        return np.argpartition(keys, k - 1, axis=1)[:, :k].astype(np.int64)
    pos = rng.integers(0, pool_size, size=(rows, k), dtype=np.int64)
    while True:
        order = np.argsort(pos, axis=1, kind="stable")
        srt = np.take_along_axis(pos, order, axis=1)
        dup = srt[:, 1:] == srt[:, :-1]
        if not dup.any():
            return pos
        r_idx, c_idx = np.nonzero(dup)
        where = order[r_idx, c_idx + 1]  # later occurrences (stable sort keeps the first first)
        pos[r_idx, where] = rng.integers(0, pool_size, size=r_idx.size, dtype=np.int64)


def sample_device_indices(labels: np.ndarray, counts: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """(n_devices, samples_per_device) int64 training-set indices with the given class counts.

    Without replacement within a device, independent across devices; each row shuffled.
    """
    counts = np.asarray(counts, dtype=np.int64)
    if counts.ndim != 2 or counts.min(initial=0) < 0:
        raise ValueError("counts must be a 2-D array of non-negative integers")
    n, C = counts.shape
    labels = _check_labels(labels, C)
    rng = _check_generator(rng)
    per_device = counts.sum(axis=1)
    if np.any(per_device != per_device[0]):
        raise ValueError("every device must have the same number of samples")
    m = int(per_device[0])

    pools = [np.flatnonzero(labels == c) for c in range(C)]
    for c in range(C):
        need = int(counts[:, c].max())
        if need > pools[c].size:
            raise ValueError(
                f"class {c} has only {pools[c].size} images but a device needs {need} distinct ones "
                "(images are drawn without replacement within a device); lower samples_per_device "
                "or rho_device"
            )

    out = np.empty((n, m), dtype=np.int64)
    start = np.cumsum(counts, axis=1) - counts  # first column of each class block
    for c in range(C):
        for k in np.unique(counts[:, c]):
            k = int(k)
            if k == 0:
                continue
            devs = np.flatnonzero(counts[:, c] == k)
            pos = _distinct_positions(rng, pools[c].size, devs.size, k)
            cols = start[devs, c][:, None] + np.arange(k)
            out[devs[:, None], cols] = pools[c][pos]
    return rng.permuted(out, axis=1)


def device_partition(
    labels: np.ndarray,
    *,
    n_devices: int = 1000,
    samples_per_device: int = 500,
    rho_device: float,
    n_classes: int = 10,
    rng: np.random.Generator,
    remainder: str = "balanced",
    return_majors: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """The paper's device-level partition: (n_devices, samples_per_device) int64 indices.

    With ``return_majors=True`` returns ``(indices, majors)``; majors (n_devices,) are needed
    for the rho_cluster clustering and cannot be read back from the data when
    rho_device <= 1/n_classes. Random draws, in order: majors, +1 remainders, images, row
    shuffle.
    """
    rho = _check_rho("rho_device", rho_device)
    n_classes = _check_positive_int("n_classes", n_classes, 2)
    samples_per_device = _check_positive_int("samples_per_device", samples_per_device)
    labels = _check_labels(labels, n_classes)
    if remainder not in REMAINDERS:
        raise ValueError(f"remainder must be one of {REMAINDERS}, got {remainder!r}")
    majors = assign_majors(n_devices, n_classes, rng)
    counts = device_class_counts(
        majors,
        samples_per_device=samples_per_device,
        rho_device=rho,
        n_classes=n_classes,
        rng=rng,
        remainder=remainder,
    )
    indices = sample_device_indices(labels, counts, rng)
    return (indices, majors) if return_majors else indices


# --- clusters --------------------------------------------------------------------------


def _check_clusters_divide(n_devices: int, n_clusters: int) -> tuple[int, int]:
    n_devices = _check_positive_int("n_devices", n_devices)
    n_clusters = _check_positive_int("n_clusters", n_clusters)
    if n_devices % n_clusters:
        raise ValueError(
            f"n_devices={n_devices} is not divisible by n_clusters={n_clusters}: clusters must have equal sizes"
        )
    return n_devices, n_clusters


def random_clusters(n_devices: int, n_clusters: int, rng: np.random.Generator) -> np.ndarray:
    """(M, n_devices // M) int64 device ids: a uniformly random partition into equal clusters."""
    n_devices, n_clusters = _check_clusters_divide(n_devices, n_clusters)
    perm = _check_generator(rng).permutation(n_devices).astype(np.int64)
    return np.sort(perm.reshape(n_clusters, n_devices // n_clusters), axis=1)


def rho_cluster_matrix(n_devices: int, n_clusters: int, rho_cluster: float, rng: np.random.Generator) -> np.ndarray:
    """(M, M) int64 circulant: entry [m, c] = number of devices of major class c in cluster m."""
    rho = _check_rho("rho_cluster", rho_cluster)
    n_devices, M = _check_clusters_divide(n_devices, n_clusters)
    if M < 2:
        raise ValueError("the rho_cluster construction needs at least 2 clusters")
    S = n_devices // M
    d = round_half_up(rho * S)
    base, extra = divmod(S - d, M - 1)
    row = np.full(M, base, dtype=np.int64)
    row[0] = d
    row[1 + _check_generator(rng).choice(M - 1, size=extra, replace=False)] += 1
    return np.stack([np.roll(row, m) for m in range(M)])  # [m, (m + s) % M] = row[s]


def rho_cluster_clusters(
    majors: np.ndarray, n_clusters: int, rho_cluster: float, rng: np.random.Generator
) -> np.ndarray:
    """(M, n_devices // M) int64 device ids; cluster m's major class is m (paper IV-E).

    Needs M == n_classes ("each cluster is assigned a different major class") and every class
    the major of n_devices / M devices, as ``assign_majors`` makes them.
    """
    majors = np.asarray(majors, dtype=np.int64)
    if majors.ndim != 1 or majors.size == 0 or majors.min() < 0:
        raise ValueError("majors must be a non-empty 1-D array of non-negative classes")
    n = majors.size
    n, M = _check_clusters_divide(n, n_clusters)
    group_sizes = np.bincount(majors, minlength=M)
    if group_sizes.size != M or np.any(group_sizes != n // M):
        raise ValueError(
            f"the rho_cluster construction needs n_clusters == n_classes and every class the major "
            f"class of n_devices / n_clusters = {n // M} devices; got n_clusters={M}, devices per major "
            f"class {group_sizes.tolist()}"
        )
    counts = rho_cluster_matrix(n, M, rho_cluster, rng)
    clusters = np.empty((M, n // M), dtype=np.int64)
    fill = np.zeros(M, dtype=np.int64)
    for c in range(M):
        pool = rng.permutation(np.flatnonzero(majors == c))
        ends = np.cumsum(counts[:, c])  # column sums to n // M: the pool is used up exactly
        for m, chunk in enumerate(np.split(pool, ends[:-1])):
            clusters[m, fill[m] : fill[m] + chunk.size] = chunk
            fill[m] += chunk.size
    return np.sort(clusters, axis=1)


# --- IID and k classes per client (DeFedAvg; docs/papers/defedavg.md R9) -------------------------


def iid_partition(
    n_samples: int, *, n_clients: int, rng: np.random.Generator, samples_per_client: int | None = None
) -> np.ndarray:
    """(n_clients, m) int64 disjoint indices into range(n_samples): a uniformly random equal split.

    m defaults to n_samples // n_clients (the remainder is left out); each row is in random order.
    """
    n_samples = _check_positive_int("n_samples", n_samples)
    n_clients = _check_positive_int("n_clients", n_clients)
    m = n_samples // n_clients if samples_per_client is None else _check_positive_int("samples_per_client", samples_per_client)
    if m < 1 or m * n_clients > n_samples:
        raise ValueError(
            f"{n_clients} clients x {max(m, 1)} samples need {n_clients * max(m, 1)} distinct samples, only {n_samples} exist"
        )
    perm = _check_generator(rng).permutation(n_samples)
    return perm[: n_clients * m].reshape(n_clients, m).astype(np.int64)


def class_groups(
    n_clients: int, n_classes: int, rng: np.random.Generator, classes_per_client: int = 2, max_swaps: int = 100_000
) -> np.ndarray:
    """(n_clients, k) int64: k distinct classes per client, each class on exactly k * n_clients / n_classes clients.

    Construction (docs/papers/defedavg.md R9): shuffle [0..C-1] x (kN/C), cut it into consecutive groups of k, then
    repair every group that holds a class twice by swapping one of its repeated entries with a
    random entry of another group, keeping a swap only if neither group then repeats a class. Swaps
    keep every class's count, so the balance is exact; everything depends on ``rng`` only.
    """
    N = _check_positive_int("n_clients", n_clients)
    C = _check_positive_int("n_classes", n_classes)
    k = _check_positive_int("classes_per_client", classes_per_client)
    rng = _check_generator(rng)
    if k > C:
        raise ValueError(f"classes_per_client={k} exceeds n_classes={C}: a client's classes must be distinct")
    if (N * k) % C:
        raise ValueError(
            f"n_clients * classes_per_client = {N * k} is not divisible by n_classes={C}: every class must be on "
            "the same number of clients; choose n_clients as a multiple of "
            f"{C // math.gcd(C, k)}"
        )
    slots = np.repeat(np.arange(C, dtype=np.int64), N * k // C)
    rng.shuffle(slots)
    groups = slots.reshape(N, k)
    for _ in range(max_swaps):
        srt = np.sort(groups, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
        if bad.size == 0:
            return groups
        g = int(bad[rng.integers(bad.size)])
        row = groups[g]
        repeated = [p for p in range(k) if np.count_nonzero(row == row[p]) > 1]
        p = repeated[rng.integers(len(repeated))]
        h = int(rng.integers(N - 1))
        h += h >= g  # another group, uniformly
        q = int(rng.integers(k))
        a, b = row[p], groups[h, q]
        if b in row or a in np.delete(groups[h], q):
            continue  # the swap would leave a repeat in one of the two groups
        groups[g, p], groups[h, q] = b, a
    raise ValueError(f"class_groups: no valid assignment after {max_swaps} swaps (n_clients={N}, n_classes={C}, k={k})")


def class_group_partition(
    labels: np.ndarray,
    *,
    n_clients: int,
    rng: np.random.Generator,
    n_classes: int = 10,
    classes_per_client: int = 2,
    samples_per_client: int | None = None,
    return_classes: bool = False,
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """(n_clients, m) int64 disjoint indices into labels: each client holds k distinct classes
    (``class_groups``) and each class's samples are split equally among the clients that hold it.

    Every client gets m / k samples of each of its classes; m defaults to the largest size all
    classes can supply (600 per client for Fashion-MNIST's 6000 per class, 100 clients, k = 2).
    With ``return_classes=True`` returns ``(indices, classes (n_clients, k))``.
    """
    C = _check_positive_int("n_classes", n_classes)
    labels = _check_labels(labels, C)
    k = _check_positive_int("classes_per_client", classes_per_client)
    classes = class_groups(n_clients, C, rng, k)
    per_class_clients = classes.shape[0] * k // C
    pools = [np.flatnonzero(labels == c) for c in range(C)]
    supply = min(pool.size for pool in pools) // per_class_clients
    if samples_per_client is None:
        share = supply
    else:
        m = _check_positive_int("samples_per_client", samples_per_client)
        if m % k:
            raise ValueError(f"samples_per_client={m} must be divisible by classes_per_client={k} (equal shares per class)")
        share = m // k
    if share < 1 or share > supply:
        scarce = int(np.argmin([pool.size for pool in pools]))
        raise ValueError(
            f"class {scarce} has {pools[scarce].size} samples for {per_class_clients} clients: at most {supply} each, "
            f"{share if share >= 1 else 'at least 1'} needed; lower samples_per_client or n_clients"
        )
    out = np.empty((classes.shape[0], k * share), dtype=np.int64)
    for c in range(C):
        holders = np.argwhere(classes == c)  # (client, position) pairs, in client order
        chosen = rng.permutation(pools[c])[: holders.shape[0] * share].reshape(holders.shape[0], share)
        for (client, pos), chunk in zip(holders, chosen):
            out[client, pos * share : (pos + 1) * share] = chunk
    out = rng.permuted(out, axis=1)
    return (out, classes) if return_classes else out
