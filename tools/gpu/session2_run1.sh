#!/usr/bin/env bash
# Session 2, GPU run 1 (about 8 minutes): cuda lanes of core/norm/modulate/umbrella, the
# ln_modulate bench with the unrolled chunk loops, modulate tile sweep + benches, host profile.
# Usage on the device machine, from the repo root: bash tools/gpu/session2_run1.sh <git-sha> <out-dir>
set -uo pipefail
SHA="$1"
OUT="$2"
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" SGL_PYTHON=python3
{ nvidia-smi --query-gpu=name,driver_version --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } | tee "$OUT/gpu.txt"
for p in core norm modulate umbrella; do
    python3 -m nox --no-color -f noxfile.py -s "tests(package='$p', platform='cuda')" -- -q -rfE 2>&1 | tail -15
done 2>&1 | tee "$OUT/cuda_lane.log"
python3 -m sgl_diffusion bench --op ln_modulate --out "$OUT/ln_modulate_bench_h200.json" 2>&1 | tail -24
python3 tools/gpu/modulate_tile_sweep.py "$OUT/modulate_tile_sweep_h200.json" 2>&1 | tail -40
for op in scale_shift gated_residual; do
    python3 -m sgl_diffusion bench --op "$op" --out "$OUT/${op}_bench_h200.json" 2>&1 | tail -12
done
python3 tools/gpu/host_profile.py 2>&1 | tee "$OUT/host_profile.log" | tail -12
