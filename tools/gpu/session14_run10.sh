#!/usr/bin/env bash
# Session 14 run 10 (one nvidia-h200, ~3 minutes): channel_rms_norm fp16 at C = 384 contiguous with the
# held values widened through their bits (128 registers: two CTAs per SM, was 165-171): the held slab
# with one CTA / a two-CTA cluster, with and without gamma / bias ahead (channel_cluster_sweep.py
# ops-fp16), the public op's fp16 bench, and the GPU lane.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r10
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 120 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_fp16_bits_s14_torchptxas_h200.json" ops-fp16 > "$OUT/channel_fp16_bits_s14_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback" "$OUT/channel_fp16_bits_s14_torchptxas.log" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, prefetch=False, hold=True, //' | cut -c1-200
snap
bench 0 norm.channel_rms_norm 120 --cases c384,c384-240 --dtype fp16
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s14_fp16_bits.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s14_fp16_bits.log"
t channel_rms_norm 200 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py --durations=3
tail -n 5 "$OUT/gpu_lane_channel_rms_norm.log"
snap
