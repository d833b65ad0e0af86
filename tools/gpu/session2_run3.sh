#!/usr/bin/env bash
# Session 2, GPU run 3: GPU-marked tests + benches of rope (after the interleaved/grid fixes),
# activation and the new norm ops (qk_norm, channel_rms_norm, group_norm_silu); rope sweep.
# Every section has its own time limit so one slow part cannot eat the others.
# Usage on the device machine, from the repo root: bash tools/gpu/session2_run3.sh <git-sha> <out-dir>
set -uo pipefail
SHA="$1"
FINAL="$2"
OUT=/tmp/run_out  # many files; they come back as one archive (the device returns at most 8 files)
mkdir -p "$OUT" "$FINAL"
snap() { tar czf "$FINAL/results.tgz" -C "$OUT" .; }  # after every section: a killed run keeps what finished
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA"
gpu_tests() {  # package dir, time limit
    timeout "$2" python3 -m pytest "packages/$1/tests" -m gpu -q -rfE -p no:cacheprovider 2>&1 | tail -30
}
bench() {  # op, time limit
    timeout "$2" python3 -m sgl_diffusion bench --op "$1" --out "$OUT/${1#*.}_bench_h200.json" 2>&1 | grep -v "^\[" | tail -16
    snap
}
{ gpu_tests sgl-diffusion-rope 80; gpu_tests sgl-diffusion-activation 80; gpu_tests sgl-diffusion-norm 100; } \
    2>&1 | tee "$OUT/gpu_tests.log"
snap
timeout 60 python3 tools/gpu/rope_sweep.py "$OUT/rope_sweep_h200.json" 2>&1 | tail -24
snap
{
    for op in rope.apply_rope rope.apply_rope_qk rope.rope_3d rope.qk_norm_rope; do bench $op 45; done
    for op in activation.silu_and_mul activation.gelu_tanh_and_mul activation.gelu_tanh; do bench $op 40; done
    for op in norm.qk_norm norm.channel_rms_norm norm.group_norm_silu; do bench $op 45; done
} 2>&1 | tee "$OUT/bench.log"
