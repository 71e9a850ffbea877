"""What a reviewer needs to trust a run: code version, software, device, data checksums."""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from fedrepro.errors import DataError
from fedrepro.utils.digest import tree_sha256

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


def float_settings() -> dict[str, Any]:
    """The switches that decide a GPU run's floats, as torch has them: TF32 for matmuls and for cuDNN's
    convolutions (torch's defaults differ: off for matmuls, on for convolutions), cuDNN's determinism and its
    benchmark autotuner (which picks kernels by timing them, so by chance). Recorded for every run, a CPU run's
    too (where they are in effect for nothing), so that two records compare field by field."""
    import torch

    return {
        "matmul_allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn_allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "cudnn_deterministic": bool(torch.backends.cudnn.deterministic),
        "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
        "deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
    }


def device_info(device: str) -> dict[str, Any]:
    import torch

    info: dict[str, Any] = {
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "machine": platform.machine(),
        **float_settings(),
    }
    if device.startswith("cuda"):
        info |= gpu_info(torch.device(device))
    return info


def gpu_info(device: Any) -> dict[str, Any]:
    """What decides a GPU's floats besides the code: the card, its driver and the CUDA and cuDNN builds."""
    import torch

    return {"cuda_device": torch.cuda.get_device_name(device),
            "cuda_capability": ".".join(map(str, torch.cuda.get_device_capability(device))),
            "cuda_driver": _nvidia_driver(), "cuda_version": torch.version.cuda,
            "cudnn_version": torch.backends.cudnn.version()}


def _nvidia_driver() -> str | None:
    """The NVIDIA driver's version, from nvidia-smi (torch does not report it); None where it cannot be read."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return out.splitlines()[0].strip() if out.strip() else None


# Instruction sets by which the math libraries pick their code path (MKL's dispatch, OpenBLAS's core type,
# torch's CPU capability): two CPUs that differ here may round differently in the same code.
CPU_FLAGS = ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f", "avx512dq", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_int8")


def platform_info() -> dict[str, Any]:
    """What decides a run's floats besides the code, the packages and the data: the CPU (its model and the
    instruction sets the math libraries dispatch on) and those libraries with the code path they take
    (audit --rerun names the differences when a rerun elsewhere is equal only within tolerance)."""
    import torch
    from threadpoolctl import threadpool_info

    cpu = _cpuinfo()
    config = torch.__config__.show()
    mkl = re.search(r"Math Kernel Library Version ([\d.]+)", config)
    blas = re.search(r"BLAS_INFO=(\w+)", config)
    return {
        "cpu_model": cpu.get("model name") or platform.processor() or None,
        "cpu_flags": sorted(set(cpu.get("flags", "").split()) & set(CPU_FLAGS)),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "torch_blas": f"MKL {mkl.group(1)}" if mkl else (blas.group(1) if blas else None),
        "mkl_cbwr": os.environ.get("MKL_CBWR") or "unset (MKL picks its code path per CPU)",
        "numpy_blas": [f"{i['internal_api']} {i.get('version')} ({i.get('architecture') or i.get('threading_layer')})"
                       for i in threadpool_info() if i["user_api"] == "blas"],
    }


def _cpuinfo() -> dict[str, str]:
    """The first processor's entries of /proc/cpuinfo (empty where there is none)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return {}
    first = text.split("\n\n")[0]
    return {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines()) if k.strip()}


# What a GPU run's floats depend on besides the code, the packages and the CPU: the card, its driver, the CUDA and
# cuDNN builds and the float settings (float_settings). audit --rerun names them as it names the CPU's.
GPU_FLOATS = ("cuda_device", "cuda_capability", "cuda_driver", "cuda_version", "cudnn_version",
              "matmul_allow_tf32", "float32_matmul_precision", "cudnn_allow_tf32", "cudnn_deterministic",
              "cudnn_benchmark", "deterministic_algorithms")


def device_differences(recorded: dict[str, Any] | None, here: dict[str, Any]) -> list[str]:
    """For a GPU run, what differs between the device a run recorded and a rerun's (device_info), as "key: recorded
    -> here" (a key the record lacks: "not recorded"); nothing for a CPU run, whose floats these do not touch."""
    if not str(here.get("device", "")).startswith("cuda"):
        return []
    recorded = recorded or {}
    return [f"{key}: {recorded.get(key, 'not recorded')} -> {here.get(key)}" for key in GPU_FLOATS
            if recorded.get(key) != here.get(key)]


def platform_differences(recorded: dict[str, Any] | None, here: dict[str, Any]) -> list[str]:
    """What differs between the platform a run recorded and this one, as "key: recorded -> here"; a record
    from before platforms were recorded differs in everything it cannot show ("not recorded")."""
    if not recorded:
        return ["platform: not recorded by the run (written before fedrepro recorded it)"]
    return [f"{key}: {recorded.get(key)} -> {value}" for key, value in here.items() if recorded.get(key) != value]


def data_files(provenance_files: list[Path], prepared: list[Path] = (), repo: Path = Path(".")) -> list[dict[str, Any]]:
    """Per data file: name, sha256 and whether it came from the canonical host or a mirror. A synthetic
    stand-in has no such file: its entry is the generated data the run reads (`prepared`, an .npz or a
    multi-view folder, by its path under `repo`) with its sha256, the generator, its seed and parameters. Read
    before a run trains (execute.execute_run), so a missing or unreadable record stops it at once."""
    files = []
    for path in provenance_files:
        try:
            record = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as error:
            raise DataError(f"{path}: the data's provenance record cannot be read ({error}); prepare the "
                            f"dataset again (snakemake re-runs its download step when the file is missing)") from None
        for entry in record["files"]:
            files.append({"dataset": record["dataset"], **entry})
        if "synthetic" in record:
            for data in prepared:
                where = Path(os.path.relpath(Path(data).resolve(), Path(repo).resolve())).as_posix()
                files.append({"dataset": record["dataset"], "name": Path(data).name, "path": where,
                              "sha256": tree_sha256(data), "source": "synthetic",
                              "verified_by": "the generator's seed and parameters", **record["synthetic"]})
    return files
