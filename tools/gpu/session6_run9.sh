#!/usr/bin/env bash
# Session 6, ninth device call (nvidia-h200-x2, ~3 minutes), group_norm_silu at its final v2 rule
# (channels_last statistics: 512 programs, at least 16 positions per step):
#   GPU 0: the group_norm_silu bench, then its GPU lane.
#   GPU 1: tools/gpu/vae_norm_sweep.py on the channels_last cases around the rule.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run9.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6g
CUDA_VISIBLE_DEVICES=$G2 timeout 200 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s6_stats_final2_h200.json" \
    group_norm_silu/c96-cl,group_norm_silu/c192-cl,group_norm_silu/c384-cl > "$OUT/vae_norm_sweep_s6_stats_final2.log" 2>&1 &
bench 0 norm.group_norm_silu 100
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 -m pytest packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py -m gpu -q \
    -rfE --tb=short -p no:cacheprovider > "$OUT/gpu_lane_group_norm_silu.log" 2>&1
echo "group_norm_silu lane: $(tail -n 1 "$OUT/gpu_lane_group_norm_silu.log")"
wait
grep -v "^\[" "$OUT/vae_norm_sweep_s6_stats_final2.log" | grep -E "best|FAILED|Traceback|Error" | tail -4
snap
