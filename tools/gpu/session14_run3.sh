#!/usr/bin/env bash
# Session 14 run 3 (one nvidia-h200, ~3 minutes): channel_rms_norm contiguous C = 384 / 192 / 96 with
# each program a cluster of 2-8 CTAs that split the positions (tools/gpu/channel_cluster_sweep.py),
# under torch's ptxas (the benches' compiler).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r3
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 230 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_cluster_s14_torchptxas_h200.json" > "$OUT/channel_cluster_s14_torchptxas.log" 2>&1
echo "rc=$?"
snap
grep -E "% of copy|failed|FAILED|Traceback" "$OUT/channel_cluster_s14_torchptxas.log" | sed -e 's/ChannelConfig//' -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, //' | cut -c1-200
grep -E "^channel_rms_norm/c[0-9]+: default" "$OUT/channel_cluster_s14_torchptxas.log" | cut -c1-60
