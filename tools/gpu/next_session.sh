#!/usr/bin/env bash
# The GPU work queued for the next session (one ~5-minute call on one nvidia-h200), in priority order.
#   The exact row norms' GPU lane in full (session 13's run 6: 34 / 34 in 300 s at 30bcdc6): a check that
#       nothing moved since.
#   channel_rms_norm contiguous C = 384 (81.5-82.0% in session 13, target 85%): the rule sweep again as
#       the starting point for the next idea (session 13 rejected Triton's shared-memory pipeline of the
#       tile loads, 48.7-69.7%; session 12 the stream kernel over 128-byte runs, 43-57%).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report.json"
t row_norm_exact 330 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py --durations=6
tail -n 8 "$OUT/gpu_lane_row_norm_exact.log"
snap
vsweep torchptxas 120 channel_rms_norm/c384 TRITON_PTXAS_PATH="$TORCH_PTXAS"
