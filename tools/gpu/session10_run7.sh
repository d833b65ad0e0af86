#!/usr/bin/env bash
# Session 10, seventh call (~4 minutes, one GPU), the final code: core's triton_math tests with the
# PTX forms (the fast SiLU test's corrected bound); the contiguous cases the new rules cover but no
# run measured yet (channel_rms_norm C = 192, whose hold tile is 64 x 64 x 3 on 4 warps; 4-D
# C = 384; group_norm_silu C = 96 and 384 contiguous), benched with eager and torch.compile, and
# the VAE sweep at channel_rms_norm C = 192 contiguous.
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run7.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10g
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 -m pytest packages/sgl-diffusion-core/tests/test_triton_math.py -q -rfEs \
    -p no:cacheprovider > "$OUT/gpu_core_triton_math_s10_run7.log" 2>&1
echo "triton_math: $(tail -n 1 "$OUT/gpu_core_triton_math_s10_run7.log")"
snap
bench 0 norm.channel_rms_norm 150 --cases c96,c192,c384,c384-2d
bench 0 norm.group_norm_silu 150 --cases c96,c384
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s10g_c192_h200.json" \
    channel_rms_norm/c192 > "$OUT/vae_norm_sweep_s10g_c192.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10g_c192.log" | grep -E "default|FAILED|Traceback" | tail -3
snap
