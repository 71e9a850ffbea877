"""fetch_dataset against a real local HTTP server and a throwaway mirror directory."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fedrepro.data import download
from fedrepro.data.download import fetch_dataset, resolve_mirror
from fedrepro.errors import DataError
from fedrepro.data.registry import Checksum, Dataset, RemoteFile

BODY = b"fedrepro test payload\n" * 5000  # ~110 kB: spans many TCP segments
MD5 = hashlib.md5(BODY).hexdigest()
SHA256 = hashlib.sha256(BODY).hexdigest()
PUBLISHED = Checksum("md5", MD5)
FAST = {"retries": 2, "timeout": 5, "backoff": 0}


def _dataset(*urls: str, checksum: Checksum | None = PUBLISHED, size: int | None = len(BODY)) -> Dataset:
    remote = RemoteFile(
        name="blob.bin", urls=urls, mirror_path="blobs/blob.bin", checksum=checksum, size=size
    )
    return Dataset(key="toy", files=(remote,), homepage="", licence="", citation="")


def _listing(path: Path) -> set[str]:
    return {p.name for p in path.iterdir()} if path.exists() else set()


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/blob.bin"  # nothing listens there any more


# --- canonical download -------------------------------------------------------------


def test_download_verifies_and_records_provenance(file_server, tmp_path):
    url = file_server.serve("/blob.bin", BODY)
    result = fetch_dataset(_dataset(url), tmp_path, None, **FAST)

    toy = tmp_path / "toy"
    assert (toy / "blob.bin").read_bytes() == BODY
    assert _listing(toy) == {"blob.bin", "PROVENANCE.json"}  # no temp files left over
    expected = {
        "dataset": "toy",
        "files": [
            {
                "name": "blob.bin",
                "sha256": SHA256,
                "bytes": len(BODY),
                "source": "canonical",
                "origin": url,
                "verified_by": "canonical-md5",
            }
        ],
    }
    assert result == expected
    assert json.loads((toy / "PROVENANCE.json").read_text()) == expected


def test_file_without_published_checksum_is_recorded_as_such(file_server, tmp_path):
    url = file_server.serve("/blob.bin", BODY)
    result = fetch_dataset(_dataset(url, checksum=None, size=None), tmp_path, None, **FAST)
    assert result["files"][0]["verified_by"] == "none (no published checksum)"


def test_checksum_mismatch_leaves_nothing_behind(file_server, tmp_path):
    url = file_server.serve("/blob.bin", b"not the published bytes")
    with pytest.raises(DataError) as err:
        fetch_dataset(_dataset(url, size=None), tmp_path, None, **FAST)
    message = str(err.value)
    assert "blob.bin" in message
    assert MD5 in message  # expected
    assert hashlib.md5(b"not the published bytes").hexdigest() in message  # actual
    assert _listing(tmp_path / "toy") == set()
    assert file_server.requests == ["/blob.bin"]  # a complete, wrong file is not retried


def test_truncated_transfer_is_retried(file_server, tmp_path):
    url = file_server.serve("/blob.bin", BODY, "truncate")
    fetch_dataset(_dataset(url), tmp_path, None, **FAST)
    assert (tmp_path / "toy" / "blob.bin").read_bytes() == BODY
    assert file_server.requests == ["/blob.bin"] * 2


def test_truncated_every_time_fails_cleanly(file_server, tmp_path):
    url = file_server.serve("/blob.bin", BODY, "truncate", "truncate", "truncate")
    with pytest.raises(
        DataError, match=r"truncated transfer: received \d+ of \d+ bytes \(after 3 attempts\)"
    ):
        fetch_dataset(_dataset(url), tmp_path, None, **FAST)
    assert file_server.requests == ["/blob.bin"] * 3
    assert _listing(tmp_path / "toy") == set()


def test_retry_after_503_with_backoff(file_server, tmp_path, monkeypatch):
    delays: list[float] = []
    monkeypatch.setattr(download.time, "sleep", delays.append)
    url = file_server.serve("/blob.bin", BODY, "503", "503")
    fetch_dataset(_dataset(url), tmp_path, None, retries=3, timeout=5, backoff=0.5)
    assert file_server.requests == ["/blob.bin"] * 3
    assert delays == [0.5, 1.0]
    assert (tmp_path / "toy" / "blob.bin").read_bytes() == BODY


def test_client_error_moves_on_to_the_next_url(file_server, tmp_path):
    good = file_server.serve("/mirror/blob.bin", BODY)
    result = fetch_dataset(_dataset(file_server.base_url + "/gone", good), tmp_path, None, **FAST)
    assert file_server.requests == ["/gone", "/mirror/blob.bin"]  # a 404 is not retried
    assert result["files"][0]["origin"] == good


def test_offline_without_mirror_explains_how_to_set_one(tmp_path):
    with pytest.raises(DataError) as err:
        fetch_dataset(_dataset(_closed_port_url()), tmp_path, None, retries=1, timeout=5, backoff=0)
    message = str(err.value)
    assert "FEDREPRO_DATA_MIRROR" in message and "data_mirror" in message
    assert "cannot connect" in message
    assert _listing(tmp_path / "toy") == set()


def test_refetch_of_unchanged_files_makes_no_request(file_server, tmp_path):
    url = file_server.serve("/blob.bin", BODY)
    first = fetch_dataset(_dataset(url), tmp_path, None, **FAST)
    provenance = tmp_path / "toy" / "PROVENANCE.json"
    mtime = provenance.stat().st_mtime_ns

    assert fetch_dataset(_dataset(url), tmp_path, None, **FAST) == first
    assert file_server.requests == ["/blob.bin"]
    assert provenance.stat().st_mtime_ns == mtime  # not rewritten: downstream rules stay fresh


def test_altered_file_is_fetched_again(file_server, tmp_path):
    url = file_server.serve("/blob.bin", BODY)
    fetch_dataset(_dataset(url), tmp_path, None, **FAST)
    (tmp_path / "toy" / "blob.bin").write_bytes(b"tampered")
    fetch_dataset(_dataset(url), tmp_path, None, **FAST)
    assert file_server.requests == ["/blob.bin"] * 2
    assert (tmp_path / "toy" / "blob.bin").read_bytes() == BODY


# --- mirror mode --------------------------------------------------------------------


def _mirror(tmp_path: Path, body: bytes, manifest_sha: str | None) -> Path:
    mirror = tmp_path / "mirror"
    (mirror / "blobs").mkdir(parents=True)
    (mirror / "blobs" / "blob.bin").write_bytes(body)
    entries = {"blobs/blob.bin": {"sha256": manifest_sha, "bytes": len(body)}} if manifest_sha else {}
    (mirror / "MANIFEST.json").write_text(json.dumps(entries))
    return mirror


def test_mirror_file_matching_the_manifest_is_accepted(tmp_path):
    # Recompressed bytes: not the published checksum, but vouched for by the manifest.
    rebuilt = b"same content, different container"
    mirror = _mirror(tmp_path, rebuilt, hashlib.sha256(rebuilt).hexdigest())
    result = fetch_dataset(_dataset("http://unused.invalid/blob.bin"), tmp_path / "raw", mirror)
    (entry,) = result["files"]
    assert entry["source"] == "mirror"
    assert entry["verified_by"] == "mirror-manifest"
    assert entry["origin"] == str(mirror / "blobs" / "blob.bin")
    assert (tmp_path / "raw" / "toy" / "blob.bin").read_bytes() == rebuilt


def test_mirror_file_matching_the_published_checksum_says_so(tmp_path):
    mirror = _mirror(tmp_path, BODY, manifest_sha=None)
    result = fetch_dataset(_dataset("http://unused.invalid/blob.bin"), tmp_path / "raw", mirror)
    assert result["files"][0]["verified_by"] == "canonical-md5"


def test_mirror_file_with_wrong_hash_is_rejected(tmp_path):
    listed = hashlib.sha256(b"what the manifest promised").hexdigest()
    mirror = _mirror(tmp_path, b"corrupted copy", listed)
    with pytest.raises(DataError) as err:
        fetch_dataset(_dataset("http://unused.invalid/blob.bin"), tmp_path / "raw", mirror)
    message = str(err.value)
    assert "blob.bin" in message
    assert MD5 in message and listed in message  # both expected values
    assert hashlib.sha256(b"corrupted copy").hexdigest() in message  # actual
    assert _listing(tmp_path / "raw" / "toy") == set()


def test_missing_mirror_file_names_the_path(tmp_path):
    mirror = tmp_path / "empty-mirror"
    mirror.mkdir()
    with pytest.raises(DataError, match=r"empty-mirror/blobs/blob\.bin does not exist"):
        fetch_dataset(_dataset("http://unused.invalid/blob.bin"), tmp_path / "raw", mirror)


def test_a_deleted_manifest_is_named_as_missing(tmp_path):
    mirror = _mirror(tmp_path, b"recompressed copy", hashlib.sha256(b"recompressed copy").hexdigest())
    (mirror / "MANIFEST.json").unlink()
    with pytest.raises(DataError) as err:
        fetch_dataset(_dataset("http://unused.invalid/blob.bin"), tmp_path / "raw", mirror)
    message = str(err.value)
    assert f"the mirror has no manifest: {mirror / 'MANIFEST.json'} does not exist" in message
    assert "has no entry" not in message


@pytest.mark.parametrize(("manifest", "what"), [([{"sha256": SHA256}], "is a JSON array"),
                                                ({"blobs/blob.bin": SHA256}, "the entry for blobs/blob.bin is")])
def test_a_manifest_of_the_wrong_shape_is_a_data_error_naming_it(tmp_path, manifest, what):
    mirror = _mirror(tmp_path, BODY, manifest_sha=None)
    (mirror / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError, match=f"{mirror / 'MANIFEST.json'}.*{what}"):
        fetch_dataset(_dataset("http://unused.invalid/blob.bin"), tmp_path / "raw", mirror)


def test_a_truncated_mirror_file_gives_expected_and_actual_sizes(tmp_path):
    full = b"x" * 5000
    mirror = _mirror(tmp_path, full[:1200], hashlib.sha256(full).hexdigest())
    manifest = json.loads((mirror / "MANIFEST.json").read_text())
    manifest["blobs/blob.bin"]["bytes"] = len(full)
    (mirror / "MANIFEST.json").write_text(json.dumps(manifest))
    with pytest.raises(DataError) as err:
        fetch_dataset(_dataset("http://unused.invalid/blob.bin"), tmp_path / "raw", mirror)
    message = str(err.value)
    assert f"(published, {len(BODY)} bytes)" in message and "(mirror MANIFEST.json, 5000 bytes)" in message
    assert message.endswith(f"sha256 {hashlib.sha256(full[:1200]).hexdigest()}, 1200 bytes")


# --- resolve_mirror -----------------------------------------------------------------


def test_resolve_mirror_prefers_config_then_environment(tmp_path, monkeypatch):
    from_config, from_env = tmp_path / "a", tmp_path / "b"
    from_config.mkdir()
    from_env.mkdir()
    monkeypatch.setenv("FEDREPRO_DATA_MIRROR", str(from_env))
    assert resolve_mirror(str(from_config)) == from_config
    assert resolve_mirror(None) == from_env
    monkeypatch.delenv("FEDREPRO_DATA_MIRROR")
    assert resolve_mirror(None) is None
    assert resolve_mirror("") is None


def test_resolve_mirror_rejects_a_missing_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("FEDREPRO_DATA_MIRROR", str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match="environment variable FEDREPRO_DATA_MIRROR"):
        resolve_mirror(None)
    with pytest.raises(DataError, match="config value `data_mirror`"):
        resolve_mirror(str(tmp_path / "nowhere"))
    with pytest.raises(DataError, match=r"from the option --mirror\)"):  # `fedrepro fetch --mirror PATH`
        resolve_mirror(str(tmp_path / "nowhere"), "option --mirror")


def test_a_relative_mirror_is_resolved_once_against_where_it_was_given(tmp_path):
    """As the README writes it (FEDREPRO_DATA_MIRROR=../shared/datasets): a process that starts in the checkout and
    then works elsewhere (a copied workflow, a job in another folder) still reads the mirror it was given."""
    checkout, mirror, elsewhere = tmp_path / "repo", tmp_path / "shared" / "datasets", tmp_path / "elsewhere"
    for folder in (checkout, mirror, elsewhere):
        folder.mkdir(parents=True)
    code = ("import os; from fedrepro.data import absolute_mirror_env, resolve_mirror; absolute_mirror_env(); "
            "os.chdir(os.environ['ELSEWHERE']); print(os.environ['FEDREPRO_DATA_MIRROR']); print(resolve_mirror(None))")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
           "FEDREPRO_DATA_MIRROR": "../shared/datasets", "ELSEWHERE": str(elsewhere)}
    done = subprocess.run([sys.executable, "-c", code], cwd=checkout, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(mirror.resolve()), str(mirror.resolve())]
    # a relative value given directly (config `data_mirror`, `fedrepro fetch --mirror`) comes back absolute
    assert resolve_mirror(os.path.relpath(mirror)) == mirror.resolve()
