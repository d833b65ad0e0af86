#!/usr/bin/env bash
# Session 14 run 11 (one nvidia-h200, ~1 minute): channel_rms_norm bf16 C = 384 contiguous with a kernel
# whose warps never wait for each other (tools/gpu/channel_cols_probe.py) against the rule, twice each.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r11
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 150 python3 tools/gpu/channel_cols_probe.py \
    "$OUT/channel_cols_probe_s14_torchptxas_h200.json" > "$OUT/channel_cols_probe_s14_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback|failed|Error" "$OUT/channel_cols_probe_s14_torchptxas.log" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, prefetch=False, hold=True, //' | cut -c1-200
snap
