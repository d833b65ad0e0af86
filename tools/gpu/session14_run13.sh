#!/usr/bin/env bash
# Session 14 run 13 (one nvidia-h200, ~1 minute): the channel_rms_norm cluster rule (bf16, C = 384
# contiguous) with SiLU's exponent as its own FMA (fold_silu), interleaved three times, at the bench
# shape and at 21 x 240 x 416 (channel_cluster_sweep.py fold, torch's ptxas).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r13
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 150 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_fold_s14_torchptxas_h200.json" fold > "$OUT/channel_fold_s14_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback" "$OUT/channel_fold_s14_torchptxas.log" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, prefetch=False, hold=True, //' | cut -c1-200
snap
