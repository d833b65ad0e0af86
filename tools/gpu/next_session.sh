#!/usr/bin/env bash
# The GPU work queued for the next session (one ~5-minute call on one nvidia-h200): the open
# shortfalls session 9 left, re-measured at the current code, in priority order.
#   channel_rms_norm contiguous (C = 96 77.1%, C = 384 66.1%): session 9's Nsight Compute
#       (ncu_channel_rms_norm_c384_contig_full_s9.txt) has v1 moving the ideal DRAM bytes at 48% of
#       peak with 31 instructions per element and 2.93 of 4 issued per cycle: instruction-bound.
#       The sweep re-measures v1 / slab and the tiles around them.
#   group_norm_silu channels_last C = 96 (82.9%; C = 192 / 384 86.9 / 86.4%): the sweep around the
#       session-9 rule (dense channel tiles, 2 KB apply steps, one wave of statistics warps).
#   exact rms_modulate at FLUX / Wan (82.9 / 79.5% in session 9's sweep): the bench.
#   the cat+pad sweep at C = 384 contiguous (87.2%).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_h200.json" \
    channel_rms_norm/c384,channel_rms_norm/c96,group_norm_silu/c96-cl > "$OUT/vae_norm_sweep.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep.log" | grep -E "best|FAILED|Traceback" | tail -8
snap
bench 0 norm.rms_modulate 150 --cases flux,wan
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_h200.json" \
    > "$OUT/cat_pad_sweep.log" 2>&1
snap
