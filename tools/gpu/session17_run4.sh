#!/usr/bin/env bash
# Session 17 run 4 (one nvidia-h200, ~3 minutes): channel_rms_norm contiguous C = 384, load / store cache
# hints on the held slab's cluster kernel (tools/gpu/channel_perm_probe.py hints), each twice in turn, at
# 21 x 240 x 416 and the bench shape.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s17r4
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 300 python3 tools/gpu/channel_perm_probe.py \
    "$OUT/channel_hint_probe_s17_h200.json" hints c384-240 c384 > "$OUT/channel_hint_probe_s17.log" 2>&1
echo "rc=$?"
grep -v "^\[" "$OUT/channel_hint_probe_s17.log" | cut -c1-260 | tail -45
snap
