#!/usr/bin/env bash
# Session 6, last device call (nvidia-h200-x2, ~4 minutes): regression checks of shared code this
# session touched. The activation kernels' approximate reciprocal / exp2 now come from
# sgl_diffusion_core.triton_math: the activation GPU lane (every finite bf16 / fp16 value against
# the fp64 oracle) and the gelu bench on GPU 0; the whole layout GPU lane (the new cat+pad word
# kernel at Wan / HunyuanVideo sizes and > 2^31 elements) on GPU 1.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run10.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6h
{
    t layout 240 packages/sgl-diffusion-layout/tests/test_layout_gpu.py
    snap
} &
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 -m pytest packages/sgl-diffusion-activation/tests -m gpu -q -rfE --tb=short \
    -p no:cacheprovider > "$OUT/gpu_lane_activation.log" 2>&1
echo "activation: $(tail -n 1 "$OUT/gpu_lane_activation.log")"
bench 0 activation.gelu 60
wait
snap
