#!/usr/bin/env bash
# Session 16 run 5 (one nvidia-h200): the modulate benches at the final commit (tile-fastest 1-D grid, remembered
# index check), then the exact row norms' GPU lane in full (a check that nothing moved since session 13's 34 / 34).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s16r5
for op in scale_shift gated_residual indexed_scale_shift indexed_gated_residual; do
    bench 0 "modulate.$op" 100
done
export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report.json"
t row_norm_exact 330 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py --durations=6
tail -n 8 "$OUT/gpu_lane_row_norm_exact.log"
snap
