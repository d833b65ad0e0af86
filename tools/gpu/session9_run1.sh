#!/usr/bin/env bash
# Session 9, first call (~6 minutes, one GPU): exact RMSNorm rows per warp (PACK: 16-byte accesses)
# against the default at FLUX / Wan / HunyuanVideo, both ptxas; group_norm_silu channels_last
# re-measured, with Nsight Compute on its two heavy kernels at C = 384.
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9a
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s9_pack_h200.json" \
    rms_modulate,rms_norm flux,wan,hunyuan > "$OUT/exact_norm_sweep_s9_pack.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_s9_pack.log" | tail -45
snap
bench 0 norm.group_norm_silu 150 --cases c192-cl,c96-cl,c384-cl
CUDA_VISIBLE_DEVICES=0 timeout 120 ncu --kernel-name regex:_gn_ --launch-skip 0 --launch-count 3 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats --section InstructionStats --section SchedulerStats \
    python3 -m sgl_diffusion bench --op norm.group_norm_silu --cases c384-cl --rep 1 \
    > "$OUT/ncu_group_norm_silu_s9_c384-cl.txt" 2>&1
grep -E "_gn_|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|L1/TEX Hit|L2 Hit|Issue Slots Busy|Eligible Warps" \
    "$OUT/ncu_group_norm_silu_s9_c384-cl.txt" | head -40
snap
