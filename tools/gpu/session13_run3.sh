#!/usr/bin/env bash
# Session 13, third device call (~8 minutes, one nvidia-h200), at the new rule (exact RMSNorm's held rows
# load the output chain's operands ahead: 4 chunks up to 32 chunks, 1 above): the rms_modulate and
# rms_norm benches at FLUX / Wan / HunyuanVideo; rms_norm (weight only) swept with and without it; then
# the GPU lane of the exact row norms (torch.equal at D = 1536..5120 and the three modulation layouts,
# the gate's report, the build choices at 16401 rows).
# Usage on the device machine, from the repo root: bash tools/gpu/session13_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s13_3
bench 0 norm.rms_modulate 110 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 90 --cases flux,wan,hunyuan
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 110 python3 tools/gpu/exact_norm_sweep.py \
    "$OUT/exact_norm_sweep_s13_ahead_rms_norm_torch_h200.json" rms_norm flux,wan,hunyuan \
    '[{}, {"MOD_AHEAD": 0}, {"MOD_AHEAD": 2}, {}, {"MOD_AHEAD": 0}]' > "$OUT/exact_norm_sweep_s13_ahead_rms_norm_torch.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_s13_ahead_rms_norm_torch.log" | tail -18
snap
export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report_s13.json"
t row_norm_exact 230 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py \
    -k "modulated_exact or plain_exact or build_choices or zz" --durations=4
tail -n 8 "$OUT/gpu_lane_row_norm_exact.log"
snap
