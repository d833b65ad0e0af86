#!/usr/bin/env bash
# Session 6, second device call (nvidia-h200-x2, ~5 minutes):
#   GPU 0: channel_rms_norm's new rows kernel (channels_last) against the v1 / stream rules, and
#          the rest of tools/gpu/vae_norm_sweep.py.
#   GPU 1: Nsight Compute durations of group_norm_silu's three kernels (stats, finalize, apply) at
#          C = 384, contiguous and channels_last_3d: which pass is short of the bandwidth.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    for case in c384 c384-cl c96-cl; do
        CUDA_VISIBLE_DEVICES=$G2 timeout 100 ncu --kernel-name regex:_gn_ --launch-count 6 --section SpeedOfLight \
            python3 -m sgl_diffusion bench --op norm.group_norm_silu --cases "$case" --rep 3 \
            > "$OUT/ncu_group_norm_silu_$case.txt" 2>&1
        echo "== $case"; grep -E "_gn_|Duration|DRAM Through|Memory Through" "$OUT/ncu_group_norm_silu_$case.txt" | head -24
    done
    snap
} &
CUDA_VISIBLE_DEVICES=0 timeout 280 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_rows_h200.json" \
    > "$OUT/vae_norm_sweep_rows.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_rows.log" | grep -E "channel_rms_norm/c.*(default|best)|: default" | tail -20
snap
wait
snap
