#!/usr/bin/env bash
# Session 17 run 1 (one nvidia-h200): channel_rms_norm contiguous C = 384 with TMA box loads / stores
# (tools/gpu/channel_tma_probe.py) against the public op's cluster rule, at 21 x 240 x 416 (the point
# 0.7 short of 85%) and the bench shape 21 x 120 x 208; the benches' ptxas.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s17r1
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 280 python3 tools/gpu/channel_tma_probe.py \
    "$OUT/channel_tma_probe_s17_h200.json" c384-240 c384 > "$OUT/channel_tma_probe_s17.log" 2>&1
echo "rc=$?"
grep -v "^\[" "$OUT/channel_tma_probe_s17.log" | cut -c1-260 | tail -40
snap
