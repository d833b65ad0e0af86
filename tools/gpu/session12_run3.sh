#!/usr/bin/env bash
# Session 12, third device call (~8 minutes, one nvidia-h200), at the new rules: exact RMSNorm holds
# its row at every row count (FLUX now held), the cat+pad word kernel takes 8 rows per program across
# frame boundaries. Benches first (rms_modulate / rms_norm at FLUX, Wan, HunyuanVideo; cat+pad at the
# Wan-VAE shapes), then the GPU lanes: the exact row norms at the gate lane's 4410 rows (which now
# take the held RMSNorm row at D = 1536..5120) and graph capture; cat+pad at production shapes and
# over 2**31 elements.
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_3
bench 0 norm.rms_modulate 110 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 90 --cases flux,wan,hunyuan
bench 0 layout.causal_conv3d_cat_pad 120
t cat_pad 100 packages/sgl-diffusion-layout/tests/test_layout_gpu.py -k "cat_pad"
snap
export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report_s12.json"
t row_norm_exact 170 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py \
    -k "modulated_exact or plain_exact or cuda_graph or zz" --durations=4
tail -n 8 "$OUT/gpu_lane_row_norm_exact.log"
snap
