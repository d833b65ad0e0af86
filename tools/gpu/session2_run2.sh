#!/usr/bin/env bash
# Session 2, GPU run 2: cuda lanes of core/modulate/rope, rope sweep + benches, modulate
# (hardware rounding, measured tiles, indexed ops) sweep + benches.
# Usage on the device machine, from the repo root: bash tools/gpu/session2_run2.sh <git-sha> <out-dir>
set -uo pipefail
SHA="$1"
FINAL="$2"
OUT=/tmp/run_out  # many files; they come back as one archive (the device returns at most 8 files)
mkdir -p "$OUT" "$FINAL"
trap 'tar czf "$FINAL/results.tgz" -C "$OUT" .' EXIT
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" SGL_PYTHON=python3
for p in core modulate rope; do
    python3 -m nox --no-color -f noxfile.py -s "tests(package='$p', platform='cuda')" -- -q -rfE -x 2>&1 | tail -25
done 2>&1 | tee "$OUT/cuda_lane.log"
python3 tools/gpu/rope_sweep.py "$OUT/rope_sweep_h200.json" 2>&1 | tail -30
for op in apply_rope apply_rope_qk rope_3d qk_norm_rope scale_shift gated_residual indexed_scale_shift indexed_gated_residual; do
    python3 -m sgl_diffusion bench --op "$op" --out "$OUT/${op}_bench_h200.json" 2>&1 | grep -v "^\[" | tail -14
done 2>&1 | tee "$OUT/bench.log"
python3 tools/gpu/modulate_tile_sweep.py "$OUT/modulate_tile_sweep_h200.json" 2>&1 | tail -30
