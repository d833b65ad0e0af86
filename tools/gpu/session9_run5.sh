#!/usr/bin/env bash
# Session 9, fifth call (~5 minutes, one GPU): group_norm_silu channels_last with one-warp 2 KB apply
# steps: the sweep around it (statistics programs and steps, apply steps and steps per program),
# Nsight Compute at C = 96 (the case still short), the bench.
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9e
CUDA_VISIBLE_DEVICES=0 timeout 240 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s9_run5_h200.json" \
    group_norm_silu/c96-cl,group_norm_silu/c384-cl,group_norm_silu/c192-cl > "$OUT/vae_norm_sweep_s9_run5.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s9_run5.log" | grep -E "best|FAILED|Traceback|Error" | tail -8
snap
CUDA_VISIBLE_DEVICES=0 timeout 120 ncu --kernel-name regex:_gn_ --launch-skip 0 --launch-count 3 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats --section InstructionStats --section SchedulerStats \
    python3 -m sgl_diffusion bench --op norm.group_norm_silu --cases c96-cl --rep 1 \
    > "$OUT/ncu_group_norm_silu_s9_c96-cl.txt" 2>&1
grep -E "_gn_|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Issued Warp|Eligible Warps|Executed Instructions  " \
    "$OUT/ncu_group_norm_silu_s9_c96-cl.txt" | head -40
snap
bench 0 norm.group_norm_silu 120 --cases c192-cl,c96-cl,c384-cl
