#!/usr/bin/env bash
# Session 14 run 14 (one nvidia-h200, ~3 minutes): the final channel_rms_norm rule (bf16 C = 384 contiguous:
# two-CTA clusters, gamma / bias ahead, SiLU's exponent as its own FMA): the op's GPU lane, then the public
# op's bench at C = 384 (both sizes, both layouts) and fp16 C = 384.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r14
t channel_rms_norm 150 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py --durations=3
tail -n 3 "$OUT/gpu_lane_channel_rms_norm.log"
snap
bench 0 norm.channel_rms_norm 150 --cases c384,c384-240,c384-cl,c384-2d
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s14_fold.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s14_fold.log"
snap
