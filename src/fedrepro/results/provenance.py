"""What a reviewer needs to trust a run: code version, software, device, data checksums."""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
from pathlib import Path
from typing import Any

from fedrepro.errors import DataError

PACKAGES = ("fedrepro", "torch", "numpy", "scipy", "pandas", "snakemake", "dvc")


def git_state(repo: Path) -> dict[str, Any]:
    """Commit and dirty flag of the code; outputs are git-ignored so they do not count as dirty."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()

    try:
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(git("status", "--porcelain", "--untracked-files=no"))}
    except (subprocess.CalledProcessError, FileNotFoundError):
        return {"commit": None, "dirty": None}


def package_versions() -> dict[str, str | None]:
    versions: dict[str, str | None] = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def device_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
        "machine": platform.machine(),
    }
    if device.startswith("cuda"):
        info["cuda_device"] = torch.cuda.get_device_name(torch.device(device))
        info["cuda_version"] = torch.version.cuda
        info["cudnn_deterministic"] = torch.backends.cudnn.deterministic
    return info


def data_files(provenance_files: list[Path]) -> list[dict[str, Any]]:
    """Per data file: name, sha256 and whether it came from the canonical host or a mirror. Read before a
    run trains (execute.execute_run), so a missing or unreadable record stops it at once."""
    files = []
    for path in provenance_files:
        try:
            record = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise DataError(f"{path}: the data's provenance record cannot be read ({error}); prepare the "
                            f"dataset again (snakemake re-runs its download step when the file is missing)") from None
        for entry in record["files"]:
            files.append({"dataset": record["dataset"], **entry})
    return files
