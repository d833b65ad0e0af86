#!/usr/bin/env bash
# Session 14 run 2 (one nvidia-h200, ~2 minutes): the contiguous slab's access pattern without the
# norm's arithmetic (tools/gpu/channel_pattern_probe.py), at C = 384 / 192 / 96.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r2
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/channel_pattern_probe.py \
    "$OUT/channel_pattern_probe_s14_h200.json" > "$OUT/channel_pattern_probe_s14.log" 2>&1
echo "rc=$?"
snap
grep -E "% of copy|Error|Traceback" "$OUT/channel_pattern_probe_s14.log" | sed 's/ChannelConfig//' | cut -c1-120
tail -n 4 "$OUT/channel_pattern_probe_s14.log"
