#!/usr/bin/env bash
# Session 7, fifth call (~5 minutes, one GPU): the exact LayerNorm kernel with its chunks unrolled at
# compile time (1 / count a constant, no reciprocal loads) and the tree's coefficients in one
# 16-byte entry per combine (sm_90: 864 instructions per thread at D = 5120, run 4's build 976):
# the build-choice sweep, the exact GPU lane and the layer_norm / ln_modulate benches.
# Usage on the device machine, from the repo root: bash tools/gpu/session7_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s7e
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_layer_s7_static_h200.json" \
    layer_norm,ln_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_layer_s7_static.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_layer_s7_static.log" | tail -6
snap
t row_norm_exact_s7_static 200 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s7.json" 2>/dev/null
snap
bench "$G2" norm.layer_norm 150 --cases flux,wan,hunyuan
bench "$G2" norm.ln_modulate 150 --cases flux,wan,hunyuan
snap
