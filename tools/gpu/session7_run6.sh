#!/usr/bin/env bash
# Session 7, sixth call (~5 minutes, one GPU): run 5's build read the tree's (nA, countA) / (nB, 0)
# halves of each table entry crossed (the gate fell back on all 20 LayerNorm signatures, eager bits
# kept; the CPU lane now checks the kernel against a model of eager's order); fixed, and the output
# loop fully unrolled up to 16 chunks. The sweep, the exact GPU lane, the benches.
# Usage on the device machine, from the repo root: bash tools/gpu/session7_run6.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s7f
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_layer_s7_fixed_h200.json" \
    layer_norm,ln_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_layer_s7_fixed.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_layer_s7_fixed.log" | tail -6
snap
t row_norm_exact_s7_fixed 200 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s7.json" 2>/dev/null
snap
bench "$G2" norm.layer_norm 150 --cases flux,wan,hunyuan
bench "$G2" norm.ln_modulate 150 --cases flux,wan,hunyuan
snap
