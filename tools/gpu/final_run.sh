#!/usr/bin/env bash
# One GPU session: the cuda lane (through nox), the ln_modulate benchmark, host overhead, demo.
# Usage on the device machine, from the repo root: bash tools/gpu/final_run.sh <git-sha> <out-dir>
# Wheels of nox and its pure-Python dependencies travel in .whl/ (see the device README).
set -uo pipefail
SHA="$1"
OUT="$2"
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
export PYTHONPATH=/tmp/site:packages/sgl-diffusion-core/src:packages/sgl-diffusion-norm/src:packages/sgl-diffusion/src
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" SGL_PYTHON=python3
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"
{
    for p in core norm umbrella; do
        python3 -m nox --no-color -f noxfile.py -s "tests(package='$p', platform='cuda')" 2>&1 | tail -6
    done
    python3 -m nox --no-color -f noxfile.py -s "tests(package='norm', platform='rocm')" 2>&1 | tail -3
} | tee "$OUT/cuda_lane.log"
python3 -m sgl_diffusion bench --op ln_modulate --cases flux,wan,hunyuan,wan-per-token,wan-per-frame,wan-fp32mod \
    --out "$OUT/ln_modulate_bench_h200.json" 2>&1 | tee "$OUT/bench.log" | tail -22
python3 tools/gpu/host_profile.py 2>&1 | tee "$OUT/host_profile.log" | tail -12
python3 tools/demo.py 2>&1 | tee "$OUT/demo.log" | tail -6
