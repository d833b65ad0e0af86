#!/usr/bin/env bash
# Session 7, third call (~5 minutes on nvidia-h200-x2, ~8 on one GPU, the parts in sequence). Run 2 measured the register-resident row
# (dropped since: 40.7% at Wan against the loop's 62.6%). Now the loop version with the mask-free
# Welford step for full chunks (EVEN) and, as a build choice, one vector load per chunk (VEC).
#   GPU 0: the build-choice sweep of layer_norm / ln_modulate at FLUX, Wan, HunyuanVideo (every
#          configuration checked torch.equal to eager at the production shape).
#   GPU 1: the exact GPU lane (bits equal to eager, gate states), the layer_norm / ln_modulate
#          benches, then Nsight Compute (warp states, instruction mix) on the exact kernel at Wan.
# Usage on the device machine, from the repo root: bash tools/gpu/session7_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s7c
gpu1() {
    t row_norm_exact_s7_final 200 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
    cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s7.json" 2>/dev/null
    snap
    bench "$G2" norm.layer_norm 150 --cases flux,wan,hunyuan
    bench "$G2" norm.ln_modulate 150 --cases flux,wan,hunyuan
    CUDA_VISIBLE_DEVICES=$G2 timeout 120 ncu --kernel-name regex:_row_norm_exact_kernel --launch-count 1 \
        --section SpeedOfLight --section WarpStateStats --section InstructionStats --section Occupancy \
        --section LaunchStats --section MemoryWorkloadAnalysis \
        python3 -m sgl_diffusion bench --op norm.layer_norm --cases wan --rep 2 > "$OUT/ncu_layer_norm_exact_wan.txt" 2>&1
    grep -E "Duration|DRAM Through|Compute \(SM\)|Issue Slots Busy|Issued Ipc|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Stall" \
        "$OUT/ncu_layer_norm_exact_wan.txt" | head -20
    snap
}
sweep() {
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_layer_s7_vec_h200.json" \
    layer_norm,ln_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_layer_s7_vec.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_layer_s7_vec.log" | tail -8
}
if [ "$G2" -gt 0 ]; then gpu1 & sweep; wait; else sweep; gpu1; fi  # one GPU: one after the other
snap
