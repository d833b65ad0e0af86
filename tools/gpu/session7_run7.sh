#!/usr/bin/env bash
# Session 7, seventh call (~6 minutes, one GPU): the exact row-norm kernels drop their masks when a
# program holds one row whose chunks are all full (EVEN; sm_90: rms_modulate at Wan 2576 -> 2224
# instructions, layer_norm at FLUX 880 -> 856). The sweep (EVEN on / off, all four exact ops), the
# exact GPU lane, and the benches of the four ops.
# Usage on the device machine, from the repo root: bash tools/gpu/session7_run7.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s7g
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s7_unmasked_h200.json" \
    layer_norm,ln_modulate,rms_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_s7_unmasked.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_s7_unmasked.log" | tail -12
snap
t row_norm_exact_s7_unmasked 150 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s7.json" 2>/dev/null
snap
bench "$G2" norm.layer_norm 60 --cases flux,wan,hunyuan
bench "$G2" norm.ln_modulate 60 --cases flux,wan,hunyuan
bench "$G2" norm.rms_modulate 60 --cases flux,wan,hunyuan
snap
