#!/usr/bin/env bash
# Session 6, seventh device call (nvidia-h200-x2, ~4 minutes): group_norm_silu's rows statistics
# kernel on channels_last x (v2), its loop unrolled 2 / 4 / 8 times (sm_90 SASS of the one-step
# prefetch form showed the next step's loads scheduled after the accumulation), and 512 .. 4096
# statistics programs; tools/gpu/vae_norm_sweep.py on the three channels_last cases, split over
# both GPUs.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run7.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6e
CUDA_VISIBLE_DEVICES=$G2 timeout 250 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s6_stats_b_h200.json" \
    group_norm_silu/c384-cl > "$OUT/vae_norm_sweep_s6_stats_b.log" 2>&1 &
CUDA_VISIBLE_DEVICES=0 timeout 250 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s6_stats_a_h200.json" \
    group_norm_silu/c96-cl,group_norm_silu/c192-cl > "$OUT/vae_norm_sweep_s6_stats_a.log" 2>&1
wait
for f in a b; do grep -v "^\[" "$OUT/vae_norm_sweep_s6_stats_$f.log" | grep -E "best|FAILED|Traceback|Error" | tail -4; done
snap
