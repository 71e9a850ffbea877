"""Synthetic stand-ins for the TDCD datasets (docs/papers/tdcd.md R20), generated from a seed.

Each stand-in has its real dataset's layout, so the same views, loaders and engine read both:
  cifar10_splitpair  like data/prepared/cifar10.npz: x uint8 (n, 32, 32, 3) HWC, y int64 in 0..9
  synthetic_ihm      like data/prepared/mimic3_ihm.npz: x float32 (n, 48, 76), y int64 0/1
  synthetic_12view   like the ModelNet40 prepared folder (multiview.py), grey: uint8 (n, 12, 1, S, S)
Random draws come from streams named by (stand-in, seed, purpose[, split]) (seeding.numpy_rng), so
the test set does not depend on the size of the training set, and a seed always gives the same bytes.
Default sizes are the paper's; the reduced profile takes a subset (docs/papers/tdcd.md R23).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from statistics import NormalDist
from typing import Any

import numpy as np

from fedrepro.data import mimic3_ihm as ihm
from fedrepro.data.multiview import N_VIEWS, multiview_writer
from fedrepro.data.vertical import split_bounds
from fedrepro.data.views import CIFAR_MEAN, CIFAR_STD  # split-pair pixels are stored so the tdcd views undo them
from fedrepro.errors import DataError
from fedrepro.seeding import numpy_rng
from fedrepro.utils import atomic

SEED = 0  # the stand-ins' data seed (a run's own seeds shuffle, partition and initialise on top of it)



def _balanced_labels(rng: np.random.Generator, n: int, classes: int) -> np.ndarray:
    return rng.permutation(np.arange(n) % classes).astype(np.int64)


def _upsample(noise: np.ndarray, factor: int) -> np.ndarray:
    """Smooth (bilinear, edge-clamped) upsampling of the last two axes by an integer factor."""
    def along(a: np.ndarray, axis: int) -> np.ndarray:
        n = a.shape[axis]
        pos = np.clip((np.arange(n * factor) + 0.5) / factor - 0.5, 0, n - 1)
        lo = np.floor(pos).astype(int)
        hi = np.minimum(lo + 1, n - 1)
        w = (pos - lo).reshape([-1 if i == axis % a.ndim else 1 for i in range(a.ndim)])
        return np.take(a, lo, axis=axis) * (1 - w) + np.take(a, hi, axis=axis) * w
    return along(along(noise, -2), -1)


# --- split-pair CIFAR (docs/papers/tdcd.md R20) -------------------------------------------------------


def splitpair_prototypes(seed: int = SEED) -> tuple[np.ndarray, np.ndarray]:
    """Left and right half-image prototypes, 5 each, (5, 3, 32, 16) with unit standard deviation:
    Gaussian noise at 3x8x4 upsampled 4x, so the patterns survive the reduced profile's 2x2 pooling."""
    rng = numpy_rng("cifar10_splitpair", seed, "prototypes")
    halves = _upsample(rng.standard_normal((2, 5, 3, 8, 4)), 4)
    halves /= halves.std(axis=(2, 3, 4), keepdims=True)
    return halves[0], halves[1]


def splitpair_class_parts(c: np.ndarray | int) -> tuple[Any, Any]:
    """Class c is drawn from left prototype c // 2 and right prototype c % 5: the pair identifies c, but
    each half alone leaves two classes (the paper's class pairs separable only by one silo)."""
    return c // 2, c % 5


def _splitpair_split(n: int, seed: int, split: str, amplitude: float, noise: float, max_shift: int,
                     left: np.ndarray, right: np.ndarray, chunk: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    rng = numpy_rng("cifar10_splitpair", seed, split)
    y = _balanced_labels(rng, n, 10)
    shifts = rng.integers(-max_shift, max_shift + 1, size=(n, 2))
    mean = np.array(CIFAR_MEAN, dtype=np.float32)[:, None, None]
    std = np.array(CIFAR_STD, dtype=np.float32)[:, None, None]
    protos = (left.astype(np.float32) * amplitude, right.astype(np.float32) * amplitude)
    pixels = np.empty((n, 32, 32, 3), dtype=np.uint8)
    p = max_shift
    for start in range(0, n, chunk):  # float32 chunks: the full train set would be 1.5 GB as float64
        stop = min(start + chunk, n)
        x = np.zeros((stop - start, 3, 32, 32), dtype=np.float32)  # zero = CIFAR's mean colour
        # One random shift per image, applied within each half, so no pixel of one half's pattern
        # crosses into the other silo's half.
        for half, (proto, index) in enumerate(zip(protos, splitpair_class_parts(y[start:stop]))):
            padded = np.pad(proto, ((0, 0), (0, 0), (p, p), (p, p)))
            for dy in range(-p, p + 1):
                for dx in range(-p, p + 1):
                    rows = np.flatnonzero((shifts[start:stop, 0] == dy) & (shifts[start:stop, 1] == dx))
                    window = padded[:, :, p - dy:p - dy + 32, p - dx:p - dx + 16]
                    x[rows, :, :, 16 * half:16 * half + 16] = window[index[rows]]
        x += noise * rng.standard_normal(x.shape, dtype=np.float32)
        chunk_pixels = np.clip(np.rint(255 * (mean + std * x)), 0, 255).astype(np.uint8)
        pixels[start:stop] = chunk_pixels.transpose(0, 2, 3, 1)
    return pixels, y


# Calibration (3x16x16 after the reduced profile's 2x2 pooling, 5000 train / 1000 test, multinomial logistic
# regression to convergence, C = 0.1): amplitude 0.12, noise 1.0 give 44% / 47% test accuracy from the
# left / right half alone (at most 50% by construction) and 92% from both; amplitude 0.5 (a reference
# prototype's value) gives 100%. A small CNN within the reduced budget should land below the linear ceiling.
def split_pair_cifar(n_train: int = 50000, n_test: int = 10000, seed: int = SEED, *,
                     amplitude: float = 0.12, noise: float = 1.0, max_shift: int = 2) -> dict[str, np.ndarray]:
    """x_train uint8 (n, 32, 32, 3) HWC, y_train int64, x_test, y_test: x = concat(L[c//2], R[c%5]) *
    amplitude, shifted by up to max_shift px, plus N(0, noise^2), in units of CIFAR's normalisation."""
    left, right = splitpair_prototypes(seed)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        x, y = _splitpair_split(n, seed, split, amplitude, noise, max_shift, left, right)
        out[f"x_{split}"], out[f"y_{split}"] = x, y
    return out


# --- synthetic IHM (docs/papers/tdcd.md R20) ----------------------------------------------------------

# The benchmark's 17 channels in its (alphabetical) order: the value columns each one fills; channel k's
# missingness mask is column 59 + k.
IHM_CHANNEL_COLUMNS: tuple[tuple[int, ...], ...] = (
    tuple(range(0, 2)), (2,), (3,), tuple(range(4, 12)), tuple(range(12, 24)), tuple(range(24, 37)),
    tuple(range(37, 49)), *((c,) for c in range(49, 59)),
)
IHM_LATENTS = 4  # one latent factor per N = 4 column group


def _ihm_model(seed: int) -> dict[str, np.ndarray]:
    """Per-channel parameters shared by every patient of every split."""
    rng = numpy_rng("synthetic_ihm", seed, "model")
    channels = len(IHM_CHANNEL_COLUMNS)
    group_of_column = np.zeros(ihm.N_FEATURES, dtype=int)
    for g, (start, stop) in enumerate(split_bounds(ihm.N_FEATURES, IHM_LATENTS)):
        group_of_column[start:stop] = g
    return {
        # a channel follows the latent of the group holding its first column
        "group": np.array([group_of_column[cols[0]] for cols in IHM_CHANNEL_COLUMNS]),
        "weight": rng.uniform(0.4, 0.8, channels) * rng.choice([-1.0, 1.0], channels),
        "trend": rng.uniform(-0.8, 0.8, channels),  # s(t) = 1 + trend * (t / T - 1/2)
        "observed": rng.uniform(0.1, 0.9, channels),  # base observation rate per hour
        "label_weights": np.ones(IHM_LATENTS),
    }


def _ihm_split(n: int, seed: int, split: str, model: dict[str, np.ndarray], time_steps: int,
               positive_rate: float, label_noise: float, rho: float) -> tuple[np.ndarray, np.ndarray]:
    rng = numpy_rng("synthetic_ihm", seed, split)
    channels = len(IHM_CHANNEL_COLUMNS)
    z = rng.standard_normal((n, IHM_LATENTS))
    a = model["label_weights"]
    scale = float(np.sqrt(a @ a + label_noise**2))
    threshold = scale * NormalDist().inv_cdf(1 - positive_rate)
    y = (z @ a + label_noise * rng.standard_normal(n) > threshold).astype(np.int64)

    t = np.arange(time_steps) / time_steps - 0.5
    signal = (model["weight"] * z[:, model["group"]])[:, None, :] * (1 + np.outer(t, model["trend"]))[None]
    # AR(1) noise with unit stationary variance, scaled so a value column has about unit variance
    noise = np.empty((n, time_steps, channels))
    noise[:, 0] = rng.standard_normal((n, channels))
    for step in range(1, time_steps):
        noise[:, step] = rho * noise[:, step - 1] + np.sqrt(1 - rho**2) * rng.standard_normal((n, channels))
    values = signal + np.sqrt(1 - model["weight"] ** 2) * noise  # (n, T, channels)
    # Masks: observed with a rate that depends weakly on z_3 (the mask-heavy last silo carries a little
    # signal). The first hour is always observed; unobserved hours carry the previous value forward,
    # as the benchmark's impute_strategy='previous'.
    logit = np.log(model["observed"] / (1 - model["observed"]))[None, :] + 0.5 * z[:, 3:4]
    mask = rng.random((n, time_steps, channels)) < 1 / (1 + np.exp(-logit[:, None, :]))
    mask[:, 0] = True
    for step in range(1, time_steps):
        values[:, step] = np.where(mask[:, step], values[:, step], values[:, step - 1])

    x = np.zeros((n, time_steps, ihm.N_FEATURES), dtype=np.float32)
    for k, cols in enumerate(IHM_CHANNEL_COLUMNS):
        if len(cols) == 1:
            x[:, :, cols[0]] = values[:, :, k]
        else:  # ordinal category: the latent value cut into len(cols) equally likely bins, one-hot
            edges = np.array([NormalDist().inv_cdf(q) for q in np.arange(1, len(cols)) / len(cols)])
            category = np.searchsorted(edges, values[:, :, k])
            x[:, :, cols[0]:cols[-1] + 1] = np.eye(len(cols), dtype=np.float32)[category]
    x[:, :, list(ihm.MASK_COLUMNS)] = mask
    return x, y


def synthetic_ihm(n_train: int = ihm.PAPER_ROWS["train"], n_test: int = ihm.PAPER_ROWS["test"], seed: int = SEED,
                  *, time_steps: int = ihm.TIME_STEPS, positive_rate: float = 0.16, label_noise: float = 1.5,
                  rho: float = 0.9) -> dict[str, np.ndarray]:
    """x_train float32 (n, 48, 76) in the benchmark's column layout, y_train int64 0/1 with
    P(y = 1) = positive_rate; x_test, y_test. Per patient 4 latents z_g ~ N(0, 1), one per N = 4 column
    group; y = 1[sum_g z_g + label_noise * eps > thr]."""
    model = _ihm_model(seed)
    out = {}
    for split, n in (("train", n_train), ("test", n_test)):
        x, y = _ihm_split(n, seed, split, model, time_steps, positive_rate, label_noise, rho)
        out[f"x_{split}"], out[f"y_{split}"] = x, y
    return out


# --- synthetic 12-view (docs/papers/tdcd.md R20) ------------------------------------------------------

TWELVE_VIEW_CLASSES = 40
_SHARED_BLOBS = 24  # a pool of blobs that several classes draw from, so some views confuse class pairs
_ELEVATION = np.deg2rad(30.0)  # the MVCNN cameras look down at 30 degrees


def twelve_view_prototypes(seed: int = SEED) -> list[dict[str, np.ndarray]]:
    """Per class: blob centres (b, 3), widths (b,) and brightness (b,), 6-10 blobs of which 2-4 come from a
    pool shared between classes."""
    rng = numpy_rng("synthetic_12view", seed, "prototypes")
    pool = {"pos": rng.normal(0, 0.45, (_SHARED_BLOBS, 3)), "width": rng.uniform(0.1, 0.25, _SHARED_BLOBS),
            "amp": rng.uniform(0.5, 1.0, _SHARED_BLOBS)}
    classes = []
    for _ in range(TWELVE_VIEW_CLASSES):
        total, shared = int(rng.integers(6, 11)), int(rng.integers(2, 5))
        own = total - shared
        pick = rng.choice(_SHARED_BLOBS, shared, replace=False)
        classes.append({
            "pos": np.concatenate([pool["pos"][pick], rng.normal(0, 0.45, (own, 3))]),
            "width": np.concatenate([pool["width"][pick], rng.uniform(0.1, 0.25, own)]),
            "amp": np.concatenate([pool["amp"][pick], rng.uniform(0.5, 1.0, own)]),
        })
    return classes


def _render(pos: np.ndarray, width: np.ndarray, amp: np.ndarray, side: int) -> np.ndarray:
    """Gaussian splats of blobs (n, b) seen from the 12 cameras -> float (n, 12, side, side), about [0, 1].
    Camera v turns the object by v * 30 degrees about the vertical axis, then looks down at 30 degrees;
    a blob's brightness grows with its nearness, so opposite views are not mirror images."""
    azimuth = np.deg2rad(30.0 * np.arange(N_VIEWS))[None, :, None]
    x, y, z = (pos[:, None, :, i] for i in range(3))  # (n, 1, b)
    xr, zr = x * np.cos(azimuth) + z * np.sin(azimuth), -x * np.sin(azimuth) + z * np.cos(azimuth)
    u = xr  # image column
    w = y * np.cos(_ELEVATION) - zr * np.sin(_ELEVATION)  # image row (up)
    depth = y * np.sin(_ELEVATION) + zr * np.cos(_ELEVATION)  # towards the camera
    grid = np.linspace(-1.2, 1.2, side)
    s = width[:, None, :, None]
    gu = np.exp(-((grid - u[..., None]) ** 2) / (2 * s**2))  # (n, 12, b, side)
    gw = np.exp(-((grid[::-1] - w[..., None]) ** 2) / (2 * s**2))
    bright = amp[:, None, :] * (0.6 + 0.4 * np.tanh(2 * depth))
    return np.einsum("nvb,nvbi,nvbj->nvij", bright, gw, gu)


# Calibration (16x16, 2000 train / 500 test, multinomial logistic regression): one view alone 27-34% top-1,
# 65-71% top-5; all 12 views 61% top-1, 89% top-5. With jitter 0.12, drop 0.2, noise 0.1 one view already
# gave 75% top-1.
def twelve_view_batches(n: int, seed: int, split: str, side: int, *, jitter: float = 0.2, drop: float = 0.3,
                        pixel_noise: float = 0.2, chunk: int = 512) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(views uint8 (m, 12, 1, side, side), labels (m,)) in chunks: each object is its class prototype with
    blob centres moved by N(0, jitter^2), widths and brightness varied, each blob missing with probability
    `drop`, and a random overall size; pixel noise N(0, pixel_noise^2) on the [0, 1.5] intensity scale."""
    classes = twelve_view_prototypes(seed)
    rng = numpy_rng("synthetic_12view", seed, split)
    labels = _balanced_labels(rng, n, TWELVE_VIEW_CLASSES)
    most = max(len(c["width"]) for c in classes)
    for start in range(0, n, chunk):
        lab = labels[start:start + chunk]
        m = len(lab)
        pos, width, amp = np.zeros((m, most, 3)), np.full((m, most), 0.1), np.zeros((m, most))  # amp 0 pads
        for i, c in enumerate(lab):
            proto, b = classes[c], len(classes[c]["width"])
            scale = rng.uniform(0.8, 1.2)
            pos[i, :b] = (proto["pos"] + rng.normal(0, jitter, (b, 3))) * scale
            width[i, :b] = proto["width"] * np.exp(rng.normal(0, 0.15, b)) * scale
            amp[i, :b] = proto["amp"] * rng.uniform(0.7, 1.3, b) * (rng.random(b) >= drop)
        image = _render(pos, width, amp, side) + pixel_noise * rng.standard_normal((m, N_VIEWS, side, side))
        yield np.clip(np.rint(255 * image / 1.5), 0, 255).astype(np.uint8)[:, :, None], lab


# --- writing the stand-ins ----------------------------------------------------------------------------


def write_npz_standin(key: str, out_path: Path, **params: Any) -> dict[str, Any]:
    """Generate cifar10_splitpair or synthetic_ihm into `out_path` (.npz, atomically); returns the
    generator and parameters for the provenance record."""
    generators = {"cifar10_splitpair": split_pair_cifar, "synthetic_ihm": synthetic_ihm}
    if key not in generators:
        raise DataError(f"unknown .npz stand-in {key!r}; known: {', '.join(generators)}")
    arrays = generators[key](**params)
    # synthetic-IHM floats barely compress and would take seconds to deflate; CIFAR-like bytes do
    atomic.write_npz(out_path, arrays, compressed=key != "synthetic_ihm")
    return {"generator": f"{__name__}.{generators[key].__name__}", "params": params}


def write_twelve_view(out_dir: Path, *, n_train: int = 9843, n_test: int = 2468, seed: int = SEED,
                      side: int = 16) -> dict[str, Any]:
    """Generate synthetic_12view into the prepared folder `out_dir` (layout of multiview.py)."""
    params = {"n_train": n_train, "n_test": n_test, "seed": seed, "side": side}
    meta = {"dataset": "synthetic_12view", "classes": [f"class{c:02d}" for c in range(TWELVE_VIEW_CLASSES)],
            "views": N_VIEWS, "channels": 1, "side": side, "generator": f"{__name__}.twelve_view_batches",
            "params": params}
    with multiview_writer(out_dir, meta) as writer:
        for split, n in (("train", n_train), ("test", n_test)):
            views, labels, done = writer.open_split(split, n, 1, side), [], 0
            for batch, lab in twelve_view_batches(n, seed, split, side):
                views[done:done + len(lab)] = batch
                labels.append(lab)
                done += len(lab)
            views.flush()
            del views
            writer.write_labels(split, np.concatenate(labels) if labels else np.zeros(0, np.int64))
    return {"generator": meta["generator"], "params": params}
