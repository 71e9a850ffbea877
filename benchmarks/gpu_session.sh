#!/usr/bin/env bash
# One session's GPU measurements (issues 46, 61), as two commands that fit a lent device's window (about 15 minutes
# in all, a few of them its start; at most 10 minutes a command), on an H100 or H200, repo root:
#   bash benchmarks/gpu_session.sh "$OUT"        # at most 400 s: the steps' caps (`timeout`) add up to 395 s
#   bash benchmarks/gpu_session.sh "$OUT" more   # at most 90 s: the caps add up to 85 s
# (jsonschema's wheels carried in .whl: docs/performance.md, "The paper scale on a GPU".)
# Every step runs under its own cap and writes each record, as soon as it is measured, to a file of its own,
# OUT/records/STEP-WORKLOAD.json (gpu_throughput.py --out --step: a temporary file renamed), its output to
# OUT/logs/STEP.log, and a line "STEP CAP RC SECONDS" to OUT/steps.tsv (RC 124: cut by its cap). A step cut by its cap
# keeps the records it finished and the session goes on; no step writes another's files. The records of the steps
# run with --record (`"recorded": true` in them) are the lines for benchmarks/records/gpu_throughput.jsonl, whose copy
# on the device is lost; `python3 benchmarks/gpu_throughput.py --merge OUT/records` appends them.
# The steps go cheapest and most needed first. TDCD's steps take a client-step's FLOPs from the committed records
# (--flops-from), so they skip the counted round of Q iterations (~25 s) and time their 10 iterations.
# For tests (tests/benchmarks/test_gpu_session.py): GPU_SESSION_TINY=1 runs the same steps at --tiny size on the CPU
# (nothing recorded); GPU_SESSION_CAP_<STEP>=SECONDS changes a step's cap; PYTHON names the interpreter.
set -uo pipefail
out="${1:?usage: gpu_session.sh OUT_DIR [more]}"
mkdir -p "$out/records" "$out/logs"
export PYTHONUNBUFFERED=1 PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}src"
py="${PYTHON:-python3}"
if [[ -n "${GPU_SESSION_TINY:-}" ]]; then size=(--tiny --device cpu) record=(); else size=() record=(--record); fi

# run STEP CAP COMMAND...: COMMAND under STEP's cap, its output to the terminal and OUT/logs/STEP.log
run() {
  local name="$1" override="GPU_SESSION_CAP_$1"
  local cap="${!override:-$2}" start=$SECONDS rc
  echo "== $name (at most $cap s)"
  timeout -k 3 "$cap" "${@:3}" 2>&1 | tee "$out/logs/$name.log"
  rc=${PIPESTATUS[0]}
  [[ $rc == 124 || $rc == 137 ]] && echo "== $name cut by its cap ($cap s); its finished records are kept"
  printf '%s\t%s\t%s\t%s\n' "$name" "$cap" "$rc" "$((SECONDS - start))" >> "$out/steps.tsv"
}
# step STEP CAP ARGS...: benchmarks/gpu_throughput.py ARGS, each record to OUT/records/STEP-WORKLOAD.json
step() {
  run "$1" "$2" "$py" benchmarks/gpu_throughput.py "${@:3}" ${size[@]+"${size[@]}"} --out "$out" --step "$1"
}

if [[ "${2:-}" == more ]]; then
  # the tests that need CUDA (CUDA graphs, the side stream), which no CPU runs
  run more_cuda_tests 55 "$py" -m pytest -q -p no:cacheprovider -rs tests/nn -k cuda
  # the top kernels of FedCluster and DeFedAvg (whether the optimizer step and its gradient copy weigh enough to fuse)
  step more_profile 30 --workloads fedcluster_10 defedavg_fmnist --rounds 1 --window 2 --profile 25
  exit 0
fi
run card 5 nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
# the baseline, recorded: FedCluster M = 10 (10 rounds, then 10 each after an evaluation, serial and overlapped),
# DeFedAvg CIFAR-10 (the rounds of one window), TDCD CIFAR-10 (10 iterations)
base=(--rounds 10 --iterations 10)
step baseline 120 --workloads fedcluster_10 defedavg_cifar10 tdcd_cifar10 "${base[@]}" ${record[@]+"${record[@]}"}
# the conv nets' clients as grouped channels_last convolutions on CUDA (nn/convnets.py)
step grouped 60 --workloads fedcluster_10 defedavg_cifar10 "${base[@]}" --grouped-on-cuda
# two seeds a GPU (config seed_workers: 2), recorded: `fedrepro cost --gpus N --seed-workers 2` prices from these
step defedavg_processes2 50 --workloads defedavg_cifar10 --processes 2 ${record[@]+"${record[@]}"}
# TDCD CIFAR-10 three ways: without TF32; three seeds a GPU (recorded); its BatchNorm clients as one vmapped
# computation (nn/batchnorm_silo.py) against the loop of the baseline
step tdcd_tf32_off 50 --workloads tdcd_cifar10 --iterations 10 --tf32 off
step tdcd_processes3 60 --workloads tdcd_cifar10 --iterations 10 --processes 3 ${record[@]+"${record[@]}"}
step tdcd_vectorized 50 --workloads tdcd_cifar10 --iterations 10 --silo-backend vectorized
