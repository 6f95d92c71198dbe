#!/usr/bin/env bash
# W1–W3 with both lane programs, their per-step cost, the paper grid's tail and the paper
# preset's cost plan on a CUDA GPU, in one command (about 10 minutes):
#
#   bash experiments/gpu.sh [OUT]          # OUT defaults to results/gpu
#
# Needs jaxbai with a CUDA build of JAX and numba for the W1 baseline:
#   pip install -e ".[gpu,bench]"
# Writes OUT/nvidia-smi.txt; OUT/bench.{json,md} and OUT/bench_fused.{json,md} (W1–W3, `python
# -m experiments.bench --device gpu --kernel xla|fused`; a grid the fused kernel refuses is
# reported with its reason); OUT/kernels.{json,md} (`python -m experiments.bench kernels`: µs
# per step of each lane program at 128 and 32 768 lanes, and the tail, 64 runs of CTB-TT at
# ε = 0.1 on mu1, in steps per second per lane); and OUT/plan.txt (`python -m
# experiments.sweep --preset paper --device gpu --plan`: predicted samples and wall time of
# the paper's grid on this GPU, with the XLA program: the paper preset's DP-SE and per-episode
# draws are outside the fused kernel). Nothing else runs; the paper grid itself is `python -m
# experiments.sweep --preset paper --device gpu`.
set -euo pipefail
out="${1:-results/gpu}"
mkdir -p "$out"
python -c '
import sys, jax
gpus = [d for d in jax.devices() if d.platform == "gpu"]
if not gpus:
    sys.exit(f"no CUDA GPU visible to JAX (devices: {jax.devices()}); install jaxbai[gpu]")
print("JAX", jax.__version__, "on", ", ".join(sorted({d.device_kind for d in gpus})))
'
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/nvidia-smi.txt"
python -m experiments.bench --device gpu --kernel xla --out "$out/bench.json" | tee "$out/bench.md"
python -m experiments.bench --device gpu --kernel fused --out "$out/bench_fused.json" \
    | tee "$out/bench_fused.md"
python -m experiments.bench kernels --device gpu --tail-seconds 30 --out "$out/kernels.json" \
    | tee "$out/kernels.md"
python -m experiments.sweep --preset paper --device gpu --plan | tee "$out/plan.txt"
