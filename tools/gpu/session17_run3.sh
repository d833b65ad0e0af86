#!/usr/bin/env bash
# Session 17 run 3 (one nvidia-h200, ~3 minutes): channel_rms_norm contiguous C = 384, the held slab's
# channel-to-chunk assignment and chunk order (tools/gpu/channel_perm_probe.py) at the three spatial sizes
# whose channel strides (4, 1, 16 MB) measure 84.4 / 85.7 / 85.7% with the rule.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s17r3
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 400 python3 tools/gpu/channel_perm_probe.py \
    "$OUT/channel_perm_probe_s17_h200.json" c384-240 c384 c384-480 > "$OUT/channel_perm_probe_s17.log" 2>&1
echo "rc=$?"
grep -v "^\[" "$OUT/channel_perm_probe_s17.log" | cut -c1-260 | tail -45
snap
