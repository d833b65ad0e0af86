#!/usr/bin/env bash
# Session 14 run 7 (one nvidia-h200, ~5 minutes): channel_rms_norm at C = 384 over the Wan-VAE
# range's low end (1 x 384 x 21 x 240 x 416, both layouts; bf16 public op, eager, torch.compile); the
# held slab in fp16 with one CTA against the cluster (channel_cluster_sweep.py ops-fp16); group_norm_silu's
# bench in both layouts at every case (today's torch.compile baselines for the 4x target).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r7
bench 0 norm.channel_rms_norm 200 --cases c384-240,c384-240-cl,c384
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s14_c384_240.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s14_c384_240.log"
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 120 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_ops_ahead_s14_fp16_torchptxas_h200.json" ops-fp16 > "$OUT/channel_ops_ahead_s14_fp16_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback" "$OUT/channel_ops_ahead_s14_fp16_torchptxas.log" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, //' | cut -c1-200
snap
bench 0 norm.group_norm_silu 300 --cases c96-cl,c96,c192-cl,c192,c384-cl,c384
mv "$OUT/group_norm_silu_bench_h200.json" "$OUT/group_norm_silu_bench_h200_s14.json"
mv "$OUT/group_norm_silu_bench.log" "$OUT/group_norm_silu_bench_s14.log"
snap
