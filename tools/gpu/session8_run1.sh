#!/usr/bin/env bash
# Session 8, first call (~6 minutes, one GPU): exact LayerNorm's intra-warp combines as warp-local
# gathers (TREE 1: sm_90 856 -> 648 instructions per thread at D = 3072) against the shared-memory
# halving (TREE 0): the sweep at FLUX / Wan / HunyuanVideo, the exact GPU lane (the gate's 40
# signatures), the benches of layer_norm and ln_modulate.
# Usage on the device machine, from the repo root: bash tools/gpu/session8_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s8a
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s8_tree_h200.json" \
    layer_norm,ln_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_s8_tree.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_s8_tree.log" | tail -8
snap
t row_norm_exact_s8 150 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s8.json" 2>/dev/null
snap
bench 0 norm.layer_norm 60 --cases flux,wan,hunyuan
bench 0 norm.ln_modulate 60 --cases flux,wan,hunyuan
snap
