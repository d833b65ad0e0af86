#!/usr/bin/env bash
# The GPU work queued for the next session (about 8 minutes of device time):
#   1. the cuda lane of every package (nox, SGL_PYTHON=python3; nox travels as wheels in .whl/)
#   2. the ln_modulate unroll x register-cap sweep (tools/gpu/ln_modulate_unroll_sweep.py)
#   3. benchmarks: ln_modulate, scale_shift, gated_residual
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh <git-sha> <out-dir>
set -uo pipefail
SHA="$1"
OUT="$2"
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" SGL_PYTHON=python3
nvidia-smi --query-gpu=name,driver_version --format=csv | tee "$OUT/gpu.txt"
for d in packages/*/; do
    p=$(basename "$d"); p=${p#sgl-diffusion-}; [ "$p" = "sgl-diffusion" ] && p=umbrella
    python3 -m nox --no-color -f noxfile.py -s "tests(package='$p', platform='cuda')" 2>&1 | tail -4
done | tee "$OUT/cuda_lane.log"
python3 tools/gpu/ln_modulate_unroll_sweep.py "$OUT/ln_modulate_unroll_sweep.json" 2>&1 | tail -14
for op in ln_modulate scale_shift gated_residual; do
    python3 -m sgl_diffusion bench --op "$op" --out "$OUT/${op}_bench_h200.json" 2>&1 | tail -14
done
