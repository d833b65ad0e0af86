#!/usr/bin/env bash
# Session 6, fourth device call (nvidia-h200-x2, ~6 minutes):
#   GPU 0: tools/gpu/vae_norm_sweep.py at the adopted defaults (rows / v2 with the fast SiLU for
#          16-bit outputs), and v1 statistics tiles of 2x / 4x the positions.
#   GPU 1: the channel_rms_norm and group_norm_silu benches at the new defaults, then their GPU
#          lanes (production shapes against the fp32 chain and fp64).
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6b
{
    for op in norm.channel_rms_norm norm.group_norm_silu; do
        bench "$G2" "$op" 100
    done
    t channel_rms_norm 150 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py
    t group_norm_silu 150 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
    snap
} &
CUDA_VISIBLE_DEVICES=0 timeout 360 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s6_final_h200.json" \
    > "$OUT/vae_norm_sweep_s6_final.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s6_final.log" | grep -E "best|FAILED|Traceback|Error" | tail -20
snap
wait
snap
