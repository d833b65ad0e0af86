#!/usr/bin/env bash
# Session 14 run 9 (one nvidia-h200, ~2 minutes): channel_rms_norm bf16 C = 384 contiguous with 4-warp
# CTAs (three per SM) in clusters of 2 / 4 / 8 against the rule, at the bench shape and at 21 x 240 x 416
# (channel_cluster_sweep.py small, torch's ptxas).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r9
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 220 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_small_cta_s14_torchptxas_h200.json" small > "$OUT/channel_small_cta_s14_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback|failed" "$OUT/channel_small_cta_s14_torchptxas.log" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, prefetch=False, hold=True, //' | cut -c1-200
snap
