#!/usr/bin/env bash
# The GPU work queued for the next session (one ~6-minute call on one nvidia-h200), in priority order.
#   The exact row norms' GPU lane in full (session 13's run 6: 34 / 34 in 300 s at 30bcdc6; session 14
#       changed no row-norm code): a check that nothing moved since.
#   channel_rms_norm contiguous C = 384 at 21 x 240 x 416 (session 14: 84.0-84.8%, target 85%; the bench
#       shape 21 x 120 x 208 85.4-85.9%) and fp16 (68.4-68.8%): the cluster sweep's sets as the starting point
#       for the next idea (session 14 rejected an L2 prefetch of later slabs, store hints, 4-warp CTAs in
#       clusters and a barrier-free warp-per-positions kernel; see docs/benchmarks/README.md, session 14).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report.json"
t row_norm_exact 330 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py --durations=6
tail -n 8 "$OUT/gpu_lane_row_norm_exact.log"
snap
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 100 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_fold_next_h200.json" fold > "$OUT/channel_fold_next.log" 2>&1
grep -E "% of copy|FAILED" "$OUT/channel_fold_next.log" | cut -c1-200
snap
