#!/usr/bin/env bash
# Session 14 run 6 (one nvidia-h200, ~4 minutes): the final channel_rms_norm rule (C = 384 contiguous:
# two-CTA clusters with gamma / bias a chunk ahead): the public op's bench twice (bf16), once in fp16 at
# C = 384, run 5's interleaved sweep again, and the op's GPU lane.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r6
bench 0 norm.channel_rms_norm 200 --cases c384,c384-2d,c96,c192,c384-cl
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s14_final_a.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s14_final_a.log"
bench 0 norm.channel_rms_norm 200 --cases c384,c384-2d
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s14_final_b.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s14_final_b.log"
bench 0 norm.channel_rms_norm 120 --cases c384 --dtype fp16
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s14_fp16.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s14_fp16.log"
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 120 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_ops_ahead_s14_run6_torchptxas_h200.json" ops > "$OUT/channel_ops_ahead_s14_run6_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback" "$OUT/channel_ops_ahead_s14_run6_torchptxas.log" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, //' | cut -c1-200
snap
t channel_rms_norm 200 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py --durations=3
tail -n 5 "$OUT/gpu_lane_channel_rms_norm.log"
snap
