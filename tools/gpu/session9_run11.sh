#!/usr/bin/env bash
# Session 9, eleventh call (~3 minutes, one GPU): full Nsight Compute profiles (with source-level
# stall counters) of the two kernels furthest from their targets, for the next session:
# channel_rms_norm contiguous at C = 384 (v1, 66%) and exact rms_modulate at Wan (79.5%).
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run11.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9k
CUDA_VISIBLE_DEVICES=0 timeout 150 ncu --kernel-name regex:_channel_rms_kernel --launch-count 1 --set full \
    --import-source yes --print-details all python3 -m sgl_diffusion bench --op norm.channel_rms_norm --cases c384 --rep 1 \
    > "$OUT/ncu_channel_rms_norm_c384_contig_full_s9.txt" 2>&1
grep -E "Duration|DRAM Throughput|L1/TEX Cache Throughput|Registers Per|Achieved Occupancy|Eligible Warps" \
    "$OUT/ncu_channel_rms_norm_c384_contig_full_s9.txt" | head -8
snap
CUDA_VISIBLE_DEVICES=0 timeout 150 ncu --kernel-name regex:_row_norm_exact_kernel --launch-count 1 --set full \
    --import-source yes --print-details all python3 -m sgl_diffusion bench --op norm.rms_modulate --cases wan --rep 3 \
    > "$OUT/ncu_rms_modulate_wan_full_s9.txt" 2>&1
grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Eligible Warps" "$OUT/ncu_rms_modulate_wan_full_s9.txt" | head -6
snap
