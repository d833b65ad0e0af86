#!/usr/bin/env bash
# Session 2, GPU run 4 (the last few minutes): GPU-marked tests of rope, the new norm ops and
# layout, concurrently (one GPU, ~40 GB at most together), failures printed in full.
set -uo pipefail
SHA="$1"
OUT="$2"
mkdir -p "$OUT"
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=${PKG_PATHS%:} PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA"
t() { timeout 170 python3 -m pytest "$@" -m gpu -q -rfE --tb=short -p no:cacheprovider; }
t packages/sgl-diffusion-rope/tests > "$OUT/rope_gpu.log" 2>&1 &
t packages/sgl-diffusion-norm/tests --ignore=packages/sgl-diffusion-norm/tests/test_ln_modulate_gpu.py \
    > "$OUT/norm_gpu.log" 2>&1 &
t packages/sgl-diffusion-layout/tests > "$OUT/layout_gpu.log" 2>&1 &
wait
tail -3 "$OUT"/*.log
