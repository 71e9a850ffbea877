"""Fetch a dataset's files into raw_root/<dataset>/ and record where they came from.

Two sources: the canonical URLs in the registry, downloaded by pooch, or an offline mirror
directory (the layout of ../shared/datasets, with a MANIFEST.json of sha256s). Either way
pooch writes to a temporary file beside the target, which is verified and only then moved
into place, so a failed or interrupted fetch never leaves a partial or unverified file.
PROVENANCE.json says for each file which source it came from and what vouched for it.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pooch
import requests

from fedrepro.errors import DataError
from fedrepro.data.mirror import MIRROR_ENV
from fedrepro.data.registry import PROVENANCE_NAME, Dataset, RemoteFile, get_dataset
from fedrepro.utils.atomic import FILE_MODE, write_json

log = logging.getLogger(__name__)
# pooch's info lines call a mirror copy a download and suggest pasting its sha256 as a
# known_hash; our own log lines say what happens instead.
pooch.get_logger().setLevel(logging.WARNING)

NO_CHECKSUM = "none (no published checksum)"

_MIRROR_HINT = (
    "If this machine cannot reach these hosts, use a local copy of the datasets: set "
    f"`data_mirror` in config/config.yaml or the environment variable {MIRROR_ENV}, "
    f"e.g. {MIRROR_ENV}=../shared/datasets"
)


def resolve_mirror(config_value: str | None, given_as: str = "config value `data_mirror`") -> Path | None:
    """The mirror directory to use: the given value (named in messages as `given_as`: the config key, or
    `fedrepro fetch --mirror`), else $FEDREPRO_DATA_MIRROR, else None.

    A relative path is taken relative to the current directory (the project root when
    Snakemake runs the pipeline), and returned absolute: resolved once, where it was given.
    """
    if config_value:
        value, origin = config_value, given_as
    elif os.environ.get(MIRROR_ENV):
        value, origin = os.environ[MIRROR_ENV], f"environment variable {MIRROR_ENV}"
    else:
        return None
    path = Path(value).expanduser().resolve()
    if not path.is_dir():
        raise DataError(
            f"data mirror {value!r} (from the {origin}) is not a directory "
            f"(looked for {path}); fix the path or unset it to download instead"
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
    manifest = _read_manifest(mirror) if mirror is not None else None

    entries = []
    for remote in dataset.files:
        target = dest_dir / remote.name
        known = recorded.get(remote.name)
        if known and target.is_file() and pooch.file_hash(str(target)) == known["sha256"]:
            log.info("%s/%s: present and unchanged, not fetched again", dataset.key, remote.name)
            entries.append(known)
            continue
        target.unlink(missing_ok=True)  # unvouched: pooch would otherwise keep it
        if mirror is None:
            entry = _download(dataset.key, remote, target, retries=retries, timeout=timeout, backoff=backoff)
        else:
            entry = _copy_from_mirror(dataset.key, remote, target, mirror, manifest)
        os.chmod(target, FILE_MODE)  # pooch's temporary file is private (0600)
        entries.append(entry)

    provenance = {"dataset": dataset.key, "files": entries}
    if provenance != previous:  # an unchanged record keeps its mtime, so Snakemake reruns nothing
        write_json(dest_dir / PROVENANCE_NAME, provenance)
    return provenance


def _retrieve(url: str, known_hash: str | None, target: Path, downloader: Callable[..., None]) -> None:
    """pooch: download into a temporary file beside `target`, check the hash, move into place."""
    pooch.retrieve(url, known_hash, fname=target.name, path=target.parent, downloader=downloader)


# --- canonical download -------------------------------------------------------------


class _AttemptError(Exception):
    def __init__(self, reason: str, *, retry: bool) -> None:
        super().__init__(reason)
        self.retry = retry


def _download(
    key: str, remote: RemoteFile, target: Path, *, retries: int, timeout: float, backoff: float
) -> dict[str, Any]:
    known_hash = f"{remote.checksum.algo}:{remote.checksum.value.lower()}" if remote.checksum else None
    http = pooch.HTTPDownloader(progressbar=sys.stderr.isatty(), timeout=timeout)

    def download_sized(url: str, output_file: str, pup: Any) -> None:
        http(url, output_file, pup)
        nbytes = os.path.getsize(output_file)
        if remote.size is not None and nbytes != remote.size:  # the only check when no checksum is published
            raise ValueError(f"size mismatch: expected {remote.size} bytes, actual {nbytes}")

    failures: list[str] = []
    delivered = False  # some URL sent a complete file (that then failed verification)
    for url in remote.urls:
        log.info("%s/%s: downloading %s", key, remote.name, url)
        try:
            _with_retries(url, lambda: _retrieve(url, known_hash, target, download_sized), retries, backoff)
        except _AttemptError as exc:
            failures.append(f"{url}: {exc}")
            continue
        except ValueError as exc:  # pooch's hash check or our size check; the bytes are gone
            delivered = True
            failures.append(f"{url}: {exc}")
            continue
        verified_by = f"canonical-{remote.checksum.algo}" if remote.checksum else NO_CHECKSUM
        return _entry(remote.name, target, "canonical", url, verified_by)
    message = f"could not download {key}/{remote.name}:\n" + "\n".join(f"  - {f}" for f in failures)
    raise DataError(message if delivered else f"{message}\n{_MIRROR_HINT}")


def _with_retries(url: str, attempt: Callable[[], None], retries: int, backoff: float) -> None:
    # pooch's own retry_if_failed also retries 404s and hash mismatches, with fixed waits;
    # we retry only what a second attempt can fix, with exponential backoff.
    for i in range(retries + 1):
        try:
            return attempt()
        except requests.RequestException as exc:
            error = _classify(exc)
        if not error.retry:
            raise error
        if i == retries:
            raise _AttemptError(f"{error} (after {retries + 1} attempts)", retry=False)
        delay = backoff * 2**i
        log.warning("%s: %s; retrying in %.1f s", url, error, delay)
        time.sleep(delay)


def _classify(exc: requests.RequestException) -> _AttemptError:
    if isinstance(exc, requests.HTTPError):
        code = exc.response.status_code
        return _AttemptError(f"HTTP {code} {exc.response.reason}", retry=code >= 500 or code == 429)
    # urllib3 notices a body shorter than its Content-Length and says how much was read.
    short = re.search(r"IncompleteRead\((\d+) bytes read, (\d+) more expected\)", str(exc))
    if short:
        received, missing = int(short[1]), int(short[2])
        return _AttemptError(f"truncated transfer: received {received} of {received + missing} bytes", retry=True)
    if isinstance(exc, requests.ConnectionError):  # DNS failure, connection refused, ...
        return _AttemptError(f"cannot connect: {exc}", retry=True)
    return _AttemptError(f"transfer failed: {exc!r}", retry=True)


# --- offline mirror -----------------------------------------------------------------


MANIFEST_NAME = "MANIFEST.json"
_JSON_TYPES = {list: "array", str: "string", int: "number", float: "number", bool: "boolean", type(None): "null"}


def _read_manifest(mirror: Path) -> dict[str, Any] | None:
    """The mirror's manifest (its path -> {"sha256", "bytes"}), or None when the mirror has none: then only
    files matching their published checksum are accepted."""
    path = mirror / MANIFEST_NAME
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise DataError(f"data mirror manifest {path} is not valid JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise DataError(f"data mirror manifest {path} is a JSON {_JSON_TYPES.get(type(manifest), 'value')}; "
                        'expected an object mapping each file\'s path in the mirror to {"sha256": ..., "bytes": ...}')
    return manifest


def _manifest_entry(manifest: dict[str, Any] | None, mirror: Path, remote: RemoteFile) -> dict[str, Any] | None:
    entry = (manifest or {}).get(remote.mirror_path)
    if entry is not None and not (isinstance(entry, dict) and isinstance(entry.get("sha256"), str)):
        raise DataError(f"data mirror manifest {mirror / MANIFEST_NAME}: the entry for {remote.mirror_path} is "
                        f'{entry!r}; expected {{"sha256": "<64 hex digits>", "bytes": <size>}}')
    return entry


def _copy_from_mirror(
    key: str, remote: RemoteFile, target: Path, mirror: Path, manifest: dict[str, Any] | None
) -> dict[str, Any]:
    source = mirror / remote.mirror_path
    if not source.is_file():
        raise DataError(f"{key}/{remote.name}: not in the data mirror: {source} does not exist")
    listed = _manifest_entry(manifest, mirror, remote)
    verdict: list[str] = []

    def copy_verified(_url: str, output_file: str, _pup: Any) -> None:
        # Runs on pooch's temporary file: raising here leaves nothing behind.
        shutil.copyfile(source, output_file)
        digests = {algo: pooch.file_hash(output_file, alg=algo) for algo in _algos(remote)}
        # Canonical bytes are worth more than mirror-vouched ones: check them first.
        if remote.checksum and digests[remote.checksum.algo] == remote.checksum.value.lower():
            verdict.append(f"canonical-{remote.checksum.algo}")
        elif listed and digests["sha256"] == listed["sha256"].lower():
            verdict.append("mirror-manifest")
        else:
            raise _mirror_mismatch(key, remote, source, mirror, manifest, listed, digests, os.path.getsize(output_file))

    # Verification happens in copy_verified, which knows both acceptable hashes.
    _retrieve(str(source), None, target, copy_verified)
    return _entry(remote.name, target, "mirror", str(source), verdict[0])


def _mirror_mismatch(
    key: str,
    remote: RemoteFile,
    source: Path,
    mirror: Path,
    manifest: dict[str, Any] | None,
    listed: dict[str, Any] | None,
    digests: dict[str, str],
    nbytes: int,
) -> DataError:
    """Expected and actual hashes and sizes (a size alone tells a truncated copy from a different file)."""
    def sized(size: Any) -> str:
        return f", {size} bytes" if size is not None else ""

    expected = []
    if remote.checksum:
        expected.append(f"{remote.checksum.algo} {remote.checksum.value} (published{sized(remote.size)})")
    if listed:
        expected.append(f"sha256 {listed['sha256']} (mirror {MANIFEST_NAME}{sized(listed.get('bytes'))})")
    wanted = " or ".join(expected) or "a published checksum or a manifest entry, and there is neither"
    if manifest is None:
        why = f" (the mirror has no manifest: {mirror / MANIFEST_NAME} does not exist)"
    else:
        why = "" if listed else f" ({mirror / MANIFEST_NAME} has no entry for {remote.mirror_path})"
    actual = ", ".join(f"{algo} {digests[algo]}" for algo in sorted(digests))
    return DataError(
        f"{key}/{remote.name}: mirror file {source} failed verification: "
        f"expected {wanted}{why}; actual {actual}, {nbytes} bytes"
    )


# --- helpers ------------------------------------------------------------------------


def _algos(remote: RemoteFile) -> set[str]:
    return {"sha256", remote.checksum.algo} if remote.checksum else {"sha256"}


def _entry(name: str, target: Path, source: str, origin: str, verified_by: str) -> dict[str, Any]:
    return {
        "name": name,
        "sha256": pooch.file_hash(str(target)),
        "bytes": target.stat().st_size,
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
