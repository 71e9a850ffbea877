#!/usr/bin/env bash
# One session's GPU measurements (issue 46), as one script within ~9.5 minutes of an H100 or H200 (its caps add up
# to 570 s, under the device's 600 s a command): the baseline of every network engine (recorded to
# benchmarks/records/), then the candidates side by side with it on the same card.
#   device run (repo root; jsonschema's wheels carried in .whl, see docs/performance.md "The paper scale on a GPU"):
#   bash benchmarks/gpu_session.sh "$OUT"
# then, as a second command while the machine is warm (at most 120 s): the tests that need CUDA, which no CPU runs,
# and the top kernels of FedCluster and DeFedAvg (whether the optimizer step and its gradient copy weigh enough to fuse)
#   bash benchmarks/gpu_session.sh "$OUT" more
set -uo pipefail
out="${1:?usage: gpu_session.sh OUT_DIR [more]}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}src"
bench() { timeout "$1" python3 benchmarks/gpu_throughput.py "${@:2}" --out "$out" 2>&1; }
if [[ "${2:-}" == more ]]; then
  timeout 60 python3 -m pytest -q -p no:cacheprovider -rs tests/nn -k cuda 2>&1 | tee "$out/cuda_tests.log"
  bench 60 --workloads fedcluster_10 defedavg_fmnist --profile 25 | tee "$out/profile.log"
  exit 0
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$out/card.txt"
# ~4 min: all six workloads; FedCluster's also time their rounds with each evaluation serial and beside the next round
bench 300 --record | tee "$out/baseline.log"
cp benchmarks/records/gpu_throughput.jsonl "$out/"           # (the device's copy of the tree is not kept)
fast=(--workloads fedcluster_10 defedavg_fmnist defedavg_cifar10)
bench 75 "${fast[@]}" --grouped-on-cuda | tee "$out/grouped.log"
# two seeds a GPU (config seed_workers: 2), recorded: `fedrepro cost --gpus N --seed-workers 2` prices from these
bench 75 "${fast[@]}" --processes 2 --record | tee "$out/processes2.log"
bench 60 --workloads tdcd_cifar10 --iterations 10 --processes 2 --record | tee "$out/tdcd_processes2.log"
cp benchmarks/records/gpu_throughput.jsonl "$out/"
# TDCD's BatchNorm clients as one vmapped computation (nn/batchnorm_silo.py) against the loop of the baseline
bench 60 --workloads tdcd_cifar10 --iterations 10 --silo-backend vectorized | tee "$out/tdcd_vectorized_bn.log"
