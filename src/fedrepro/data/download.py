"""Fetch a dataset's files into raw_root/<dataset>/ and record where they came from.

Two sources: the canonical URLs in the registry, or an offline mirror directory (the
layout of ../shared/datasets, with a MANIFEST.json of sha256s). Every file is written to
a temporary file beside its target, verified, and only then renamed into place, so a
failed or interrupted fetch never leaves a partial or unverified file behind.
PROVENANCE.json says for each file which source it came from and what vouched for it.
"""

from __future__ import annotations

import hashlib
import http.client
import json
import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, BinaryIO

from fedrepro.errors import DataError
from fedrepro.data.registry import Dataset, RemoteFile, get_dataset
from fedrepro.utils.atomic import atomic_path, write_json

log = logging.getLogger(__name__)

MIRROR_ENV = "FEDREPRO_DATA_MIRROR"
PROVENANCE_NAME = "PROVENANCE.json"
NO_CHECKSUM = "none (no published checksum)"

_CHUNK = 1 << 20
_USER_AGENT = "fedrepro-data/1 (Python urllib)"
_MIRROR_HINT = (
    "If this machine cannot reach these hosts, use a local copy of the datasets: set "
    f"`data_mirror` in config/config.yaml or the environment variable {MIRROR_ENV}, "
    f"e.g. {MIRROR_ENV}=../shared/datasets"
)


def resolve_mirror(config_value: str | None) -> Path | None:
    """The mirror directory to use: the config value, else $FEDREPRO_DATA_MIRROR, else None.

    A relative path is taken relative to the current directory (the project root when
    Snakemake runs the pipeline).
    """
    if config_value:
        value, origin = config_value, "config value `data_mirror`"
    elif os.environ.get(MIRROR_ENV):
        value, origin = os.environ[MIRROR_ENV], f"environment variable {MIRROR_ENV}"
    else:
        return None
    path = Path(value).expanduser()
    if not path.is_dir():
        raise DataError(
            f"data mirror {value!r} (from the {origin}) is not a directory "
            f"(looked for {path.absolute()}); fix the path or unset it to download instead"
        )
    return path


def fetch_dataset(
    key: str | Dataset,
    raw_root: Path,
    mirror: Path | None,
    *,
    retries: int = 3,
    timeout: float = 60,
    backoff: float = 1.0,
) -> dict[str, Any]:
    """Put every file of a dataset under raw_root/<key>/ and write PROVENANCE.json there.

    `key` is a registry key, or a Dataset entry (tests pass one whose URLs point at a
    local server). With `mirror`, files are copied from it instead of downloaded.
    `retries` is the number of extra attempts per URL after transient failures
    (connection errors, timeouts, HTTP 5xx, truncated transfers), waiting
    backoff * 2**i seconds before retry i. Files already present with the sha256 that
    PROVENANCE.json records are kept as they are. Returns the provenance record.
    """
    dataset = key if isinstance(key, Dataset) else get_dataset(key)
    dest_dir = Path(raw_root) / dataset.key
    previous = _read_provenance(dest_dir / PROVENANCE_NAME)
    recorded = {entry["name"]: entry for entry in previous.get("files", [])}
    manifest = _read_manifest(mirror) if mirror is not None else {}

    entries = []
    for remote in dataset.files:
        target = dest_dir / remote.name
        known = recorded.get(remote.name)
        if known and target.is_file() and _sha256_of(target) == known["sha256"]:
            log.info("%s/%s: present and unchanged, not fetched again", dataset.key, remote.name)
            entries.append(known)
        elif mirror is None:
            entries.append(
                _download(dataset.key, remote, target, retries=retries, timeout=timeout, backoff=backoff)
            )
        else:
            entries.append(_copy_from_mirror(dataset.key, remote, target, mirror, manifest))

    provenance = {"dataset": dataset.key, "files": entries}
    if provenance != previous:  # an unchanged record keeps its mtime, so Snakemake reruns nothing
        write_json(dest_dir / PROVENANCE_NAME, provenance)
    return provenance


# --- canonical download -------------------------------------------------------------


class _AttemptError(Exception):
    def __init__(self, reason: str, *, retry: bool) -> None:
        super().__init__(reason)
        self.retry = retry


def _download(
    key: str, remote: RemoteFile, target: Path, *, retries: int, timeout: float, backoff: float
) -> dict[str, Any]:
    algos = _algos(remote)
    failures: list[str] = []
    delivered = False  # some URL sent a complete file (that then failed verification)
    with atomic_path(target) as tmp:
        for url in remote.urls:
            log.info("%s/%s: downloading %s", key, remote.name, url)
            try:
                nbytes, digests = _fetch_url(
                    url, tmp, algos, retries=retries, timeout=timeout, backoff=backoff
                )
            except _AttemptError as exc:
                failures.append(f"{url}: {exc}")
                continue
            problem = _canonical_mismatch(remote, nbytes, digests)
            if problem is None:
                verified_by = f"canonical-{remote.checksum.algo}" if remote.checksum else NO_CHECKSUM
                return _entry(remote.name, nbytes, digests, "canonical", url, verified_by)
            delivered = True
            failures.append(f"{url}: {problem}")
        message = f"could not download {key}/{remote.name}:\n" + "\n".join(f"  - {f}" for f in failures)
        raise DataError(message if delivered else f"{message}\n{_MIRROR_HINT}")


def _fetch_url(
    url: str, tmp: Path, algos: set[str], *, retries: int, timeout: float, backoff: float
) -> tuple[int, dict[str, str]]:
    attempt = 0
    while True:
        try:
            return _fetch_once(url, tmp, algos, timeout)
        except _AttemptError as exc:
            if not exc.retry:
                raise
            if attempt == retries:
                raise _AttemptError(f"{exc} (after {retries + 1} attempts)", retry=False) from None
            delay = backoff * 2**attempt
            log.warning("%s: %s; retrying in %.1f s", url, exc, delay)
            time.sleep(delay)
            attempt += 1


def _fetch_once(url: str, tmp: Path, algos: set[str], timeout: float) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(url, headers={"User-Agent": _USER_AGENT})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, open(tmp, "wb") as out:
            declared = response.headers.get("Content-Length")
            nbytes, digests = _copy_hashing(response, out, algos)
    except urllib.error.HTTPError as exc:
        raise _AttemptError(
            f"HTTP {exc.code} {exc.reason}", retry=exc.code >= 500 or exc.code == 429
        ) from None
    except urllib.error.URLError as exc:  # DNS failure, connection refused, ...
        raise _AttemptError(f"cannot connect: {exc.reason}", retry=True) from None
    except (http.client.HTTPException, ConnectionError, TimeoutError) as exc:
        raise _AttemptError(f"transfer failed: {exc!r}", retry=True) from None
    # http.client ends a body silently when the server closes early, so count ourselves.
    if declared is not None and nbytes != int(declared):
        raise _AttemptError(f"truncated transfer: received {nbytes} of {declared} bytes", retry=True)
    return nbytes, digests


def _canonical_mismatch(remote: RemoteFile, nbytes: int, digests: dict[str, str]) -> str | None:
    if remote.size is not None and nbytes != remote.size:
        return f"size mismatch: expected {remote.size} bytes, actual {nbytes} (sha256 {digests['sha256']})"
    if remote.checksum and digests[remote.checksum.algo] != remote.checksum.value.lower():
        algo = remote.checksum.algo
        return (
            f"checksum mismatch: expected {algo} {remote.checksum.value}, actual {algo} "
            f"{digests[algo]} (sha256 {digests['sha256']})"
        )
    return None


# --- offline mirror -----------------------------------------------------------------


def _read_manifest(mirror: Path) -> dict[str, Any]:
    path = mirror / "MANIFEST.json"
    if not path.is_file():
        return {}  # then only files matching their published checksum are accepted
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"data mirror manifest {path} is not valid JSON: {exc}") from None


def _copy_from_mirror(
    key: str, remote: RemoteFile, target: Path, mirror: Path, manifest: dict[str, Any]
) -> dict[str, Any]:
    source = mirror / remote.mirror_path
    if not source.is_file():
        raise DataError(f"{key}/{remote.name}: not in the data mirror: {source} does not exist")
    manifest_sha = manifest.get(remote.mirror_path, {}).get("sha256")
    with atomic_path(target) as tmp:
        with open(source, "rb") as src, open(tmp, "wb") as out:
            nbytes, digests = _copy_hashing(src, out, _algos(remote))
        # Canonical bytes are worth more than mirror-vouched ones: check them first.
        if remote.checksum and digests[remote.checksum.algo] == remote.checksum.value.lower():
            verified_by = f"canonical-{remote.checksum.algo}"
        elif manifest_sha and digests["sha256"] == manifest_sha.lower():
            verified_by = "mirror-manifest"
        else:
            expected = []
            if remote.checksum:
                expected.append(f"{remote.checksum.algo} {remote.checksum.value} (published)")
            if manifest_sha:
                expected.append(f"sha256 {manifest_sha} (mirror MANIFEST.json)")
            wanted = " or ".join(expected) or "a published checksum or a manifest entry, and there is neither"
            unlisted = (
                "" if manifest_sha else f" ({mirror / 'MANIFEST.json'} has no entry for {remote.mirror_path})"
            )
            actual = ", ".join(f"{algo} {digests[algo]}" for algo in sorted(digests))
            raise DataError(
                f"{key}/{remote.name}: mirror file {source} failed verification: "
                f"expected {wanted}{unlisted}; actual {actual}"
            )
        return _entry(remote.name, nbytes, digests, "mirror", str(source), verified_by)


# --- helpers ------------------------------------------------------------------------


def _algos(remote: RemoteFile) -> set[str]:
    return {"sha256", remote.checksum.algo} if remote.checksum else {"sha256"}


def _copy_hashing(src: BinaryIO, out: BinaryIO, algos: set[str]) -> tuple[int, dict[str, str]]:
    hashes = {algo: hashlib.new(algo, usedforsecurity=False) for algo in algos}
    nbytes = 0
    while chunk := src.read(_CHUNK):
        out.write(chunk)
        nbytes += len(chunk)
        for h in hashes.values():
            h.update(chunk)
    out.flush()
    os.fsync(out.fileno())
    return nbytes, {algo: h.hexdigest() for algo, h in hashes.items()}


def _sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def _entry(
    name: str, nbytes: int, digests: dict[str, str], source: str, origin: str, verified_by: str
) -> dict[str, Any]:
    return {
        "name": name,
        "sha256": digests["sha256"],
        "bytes": nbytes,
        "source": source,
        "origin": origin,
        "verified_by": verified_by,
    }


def _read_provenance(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError:
        log.warning("%s is not valid JSON; fetching every file again", path)
        return {}
