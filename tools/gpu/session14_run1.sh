#!/usr/bin/env bash
# Session 14 run 1 (one nvidia-h200, ~4 minutes): channel_rms_norm contiguous C = 384 / 192 with the
# L2 asked for a later program's slab (tools/gpu/channel_l2_ahead_sweep.py, removed with ChannelConfig.l2_ahead after
# this run; session 14's commits did not land, so neither is in the history), under torch's ptxas (the
# benches' compiler) and Triton's; then the public op's bench at the default rule (the baseline of
# the same run).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r1
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 170 python3 tools/gpu/channel_l2_ahead_sweep.py \
    "$OUT/channel_l2_ahead_s14_torchptxas_h200.json" > "$OUT/channel_l2_ahead_s14_torchptxas.log" 2>&1
grep -E "^channel_rms_norm/c[0-9]+: default|FAILED|Traceback|Error" "$OUT/channel_l2_ahead_s14_torchptxas.log" | tail -8
snap
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 tools/gpu/channel_l2_ahead_sweep.py \
    "$OUT/channel_l2_ahead_s14_tritonptxas_h200.json" > "$OUT/channel_l2_ahead_s14_tritonptxas.log" 2>&1
grep -E "^channel_rms_norm/c[0-9]+: default|FAILED|Traceback|Error" "$OUT/channel_l2_ahead_s14_tritonptxas.log" | tail -8
snap
grep -E "% of copy" "$OUT"/channel_l2_ahead_s14_*.log | sed 's/.*channel_rms_norm/crn/' | cut -c1-200
