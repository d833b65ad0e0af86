#!/usr/bin/env bash
# The GPU work queued for the next session (one ~2-minute call on one nvidia-h200).
#   channel_rms_norm contiguous C = 384 at 21 x 240 x 416, the one Wan-VAE point still short of 85% (session 16:
#       84.3%; session 14: 84.0-84.8%; 21 x 120 x 208 85.4%, 21 x 480 x 832 85.7%): the fold sweep's sets as the
#       starting point for the next idea (session 14 rejected an L2 prefetch of later slabs, store hints, 4-warp
#       CTAs in clusters and a barrier-free warp-per-positions kernel; see docs/benchmarks/README.md, session 14).
#   The exact row-norm lane ran in session 16 (34 / 34 at 612c91e); re-run it only after a row-norm change:
#       t row_norm_exact 330 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py --durations=6
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 100 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_fold_next_h200.json" fold > "$OUT/channel_fold_next.log" 2>&1
grep -E "% of copy|FAILED" "$OUT/channel_fold_next.log" | cut -c1-200
snap
