"""run.json's device record: the float settings on every run, the GPU's card, driver, CUDA and cuDNN on a GPU run
(here with a fake device description: this machine has no GPU), and audit --rerun's reading of their differences."""

from __future__ import annotations

import os
import stat

import torch

from fedrepro.engines.context import FLOAT_SETTINGS, pin_float_settings
from fedrepro.experiments import provenance


def test_every_run_records_the_float_settings_it_pinned():
    torch.backends.cudnn.benchmark = True  # as a library or a user could leave them
    torch.backends.cuda.matmul.allow_tf32 = True
    assert provenance.float_settings()["cudnn_benchmark"] is True
    pin_float_settings()
    info = provenance.device_info("cpu")
    assert {k: info[k] for k in FLOAT_SETTINGS} == FLOAT_SETTINGS
    assert "cuda_device" not in info


def _fake_gpu(monkeypatch, tmp_path, driver: str = "580.159.04") -> None:
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (9, 0))
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 91002)
    smi = tmp_path / "nvidia-smi"  # a real program on PATH, as the driver installs it
    smi.write_text(f"#!/bin/sh\necho {driver}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")


def test_a_gpu_run_records_its_card_driver_cuda_and_cudnn(monkeypatch, tmp_path):
    _fake_gpu(monkeypatch, tmp_path)
    info = provenance.device_info("cuda")
    assert info["cuda_device"] == "NVIDIA H200" and info["cuda_capability"] == "9.0"
    assert info["cuda_driver"] == "580.159.04" and info["cudnn_version"] == 91002
    assert info["cuda_version"] == torch.version.cuda and "cudnn_allow_tf32" in info


def test_without_nvidia_smi_the_driver_is_unknown_not_an_error(monkeypatch, tmp_path):
    _fake_gpu(monkeypatch, tmp_path)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    assert provenance.device_info("cuda")["cuda_driver"] is None


def test_a_rerun_on_another_gpu_or_driver_or_float_setting_is_a_platform_difference(monkeypatch, tmp_path):
    _fake_gpu(monkeypatch, tmp_path)
    recorded = provenance.device_info("cuda")
    assert provenance.device_differences(recorded, dict(recorded)) == []
    here = {**recorded, "cuda_device": "NVIDIA H100 80GB HBM3", "cuda_driver": "590.1", "cudnn_allow_tf32": False}
    assert provenance.device_differences(recorded, here) == [
        "cuda_device: NVIDIA H200 -> NVIDIA H100 80GB HBM3", "cuda_driver: 580.159.04 -> 590.1",
        "cudnn_allow_tf32: True -> False"]
    old = {k: v for k, v in recorded.items() if k not in ("cuda_driver", "cudnn_version")}  # an older record
    assert provenance.device_differences(old, recorded) == [
        "cuda_driver: not recorded -> 580.159.04", "cudnn_version: not recorded -> 91002"]


def test_a_cpu_run_has_no_gpu_differences():
    here = provenance.device_info("cpu")
    assert provenance.device_differences({"device": "cpu"}, here) == []
