#!/usr/bin/env bash
# Session 10, eighth call (~3 minutes, one GPU): contiguous channel_rms_norm's mid rule (C = 129 to
# 384: hold from 128-channel chunks, the output pass prefetching below; run 7 measured C = 192 at
# 85.2% with prefetch against 80.1% held) benched at C = 192 / 384; core's triton_math tests with the
# PTX forms again (the fast SiLU test's bound, corrected twice).
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run8.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10h
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 -m pytest packages/sgl-diffusion-core/tests/test_triton_math.py -q -rfEs \
    -p no:cacheprovider > "$OUT/gpu_core_triton_math_s10_run8.log" 2>&1
echo "triton_math: $(tail -n 1 "$OUT/gpu_core_triton_math_s10_run8.log")"
snap
bench 0 norm.channel_rms_norm 150 --cases c192,c384
