#!/usr/bin/env bash
# Session 14 run 4 (one nvidia-h200, ~6 minutes): the cluster rule for channel_rms_norm contiguous C = 384
# (two CTAs per held slab): the public op's bench (eager, torch.compile, same-run copy) at the Wan-VAE
# shapes, the cluster sweep again (the A / B repeat), and the op's GPU lane at production shapes.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r4
bench 0 norm.channel_rms_norm 260 --cases c384,c384-2d,c96,c192,c384-cl
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 100 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_cluster_s14_run4_torchptxas_h200.json" > "$OUT/channel_cluster_s14_run4_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback" "$OUT/channel_cluster_s14_run4_torchptxas.log" | grep "c384" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, //' | cut -c1-160
snap
t channel_rms_norm 200 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py --durations=5
tail -n 7 "$OUT/gpu_lane_channel_rms_norm.log"
snap
