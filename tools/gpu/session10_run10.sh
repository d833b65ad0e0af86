#!/usr/bin/env bash
# Session 10, tenth call (~2 minutes, one GPU): a full Nsight Compute profile of contiguous
# channel_rms_norm at C = 384 with the final rule (the slab held in registers, 128 x 64 x 3 on 8
# warps: 82.2-82.7% of copy, the one VAE-norm case still short of 85%), for the next session.
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run10.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10j
CUDA_VISIBLE_DEVICES=0 timeout 200 ncu --kernel-name regex:_channel_rms_kernel --launch-count 1 --set full \
    --import-source yes --print-details all python3 -m sgl_diffusion bench --op norm.channel_rms_norm --cases c384 --rep 1 \
    > "$OUT/ncu_channel_rms_norm_c384_contig_hold_s10.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Eligible Warps|Issued Ipc|Executed Instructions  " \
    "$OUT/ncu_channel_rms_norm_c384_contig_hold_s10.txt" | head -10
snap
