#!/usr/bin/env bash
# Session 8, fifth call (~4 minutes, one GPU): channel_rms_norm on contiguous x with its chunk loops
# software-pipelined (ChannelConfig.stages 2 / 3: cp.async into shared memory on sm_90) at the
# default and the best tiles of run 3; then Nsight Compute's warp-state and scheduler sections on
# the exact rms_modulate kernel at Wan (77.9% of copy: what its warps wait on).
# Usage on the device machine, from the repo root: bash tools/gpu/session8_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s8e
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s8_stages_h200.json" \
    channel_rms_norm/c96,channel_rms_norm/c384 > "$OUT/vae_norm_sweep_s8_stages.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s8_stages.log" | grep -i "stages=[23]\|best" | tail -14
snap
CUDA_VISIBLE_DEVICES=0 timeout 150 ncu --kernel-name regex:_row_norm_exact_kernel --launch-count 2 \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis --section SpeedOfLight \
    --section Occupancy --section LaunchStats \
    python3 -m sgl_diffusion bench --op norm.rms_modulate --cases wan --rep 3 > "$OUT/ncu_rms_modulate_wan_s8.txt" 2>&1
grep -E "Stall|Warp Cycles|Issued Warp|No Eligible|DRAM Throughput|L2 Hit|Achieved Occ" "$OUT/ncu_rms_modulate_wan_s8.txt" | head -30
snap
