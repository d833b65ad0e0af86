#!/usr/bin/env bash
# (tools/gpu/group_norm_pack_probe.py was removed with pack=2 after run 9; it is in git cb778ba)
# Session 9, eighth call (~2 minutes, one GPU): group_norm_silu at C = 96 channels_last, pack=2 (the
# rule), pack=1 and pack=2 with 32-row statistics steps, each on five fresh input allocations
# (run 7: the bench measured pack=2 at 85.1%, the sweep at 73.4%).
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run8.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9h
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/group_norm_pack_probe.py "$OUT/group_norm_pack_probe_h200.json" 5 \
    > "$OUT/group_norm_pack_probe.log" 2>&1
tail -16 "$OUT/group_norm_pack_probe.log"
snap
