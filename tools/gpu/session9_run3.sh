#!/usr/bin/env bash
# Session 9, third call (~4 minutes, one GPU): group_norm_silu channels_last around run 2's split
# tiles: fewer statistics programs, smaller apply steps, several apply steps per program (the next
# step's loads in flight); Nsight Compute on the split default at C = 384 (run 1 profiled the old).
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9c
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s9_apply_h200.json" \
    group_norm_silu/c384-cl,group_norm_silu/c96-cl,group_norm_silu/c192-cl > "$OUT/vae_norm_sweep_s9_apply.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s9_apply.log" | grep -E "best|FAILED|Traceback|Error" | tail -8
snap
CUDA_VISIBLE_DEVICES=0 timeout 120 ncu --kernel-name regex:_gn_ --launch-skip 0 --launch-count 3 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats --section InstructionStats --section SchedulerStats \
    python3 -m sgl_diffusion bench --op norm.group_norm_silu --cases c384-cl --rep 1 \
    > "$OUT/ncu_group_norm_silu_s9_split_c384-cl.txt" 2>&1
grep -E "_gn_|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issued Warp|Eligible Warps|Executed Instructions  " \
    "$OUT/ncu_group_norm_silu_s9_split_c384-cl.txt" | head -40
snap
