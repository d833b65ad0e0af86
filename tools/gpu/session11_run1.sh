#!/usr/bin/env bash
# Session 11, first call (~6 minutes, one GPU): exact RMSNorm with the row held in registers (HOLD:
# one read of x) against session 10's re-reading kernel at FLUX / Wan / HunyuanVideo under both
# ptxas, the exact row-norm GPU lane (the gate's bits at D 1536 / 2432 / 3072 / 5120) and the
# rms_modulate / rms_norm benches.
# Usage on the device machine, from the repo root: bash tools/gpu/session11_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s11a
for px in triton torch; do
    if [ $px = torch ]; then export TRITON_PTXAS_PATH=$TORCH_PTXAS; fi
    CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s11_hold_${px}_h200.json" \
        rms_modulate,rms_norm flux,wan,hunyuan > "$OUT/exact_norm_sweep_s11_hold_${px}.log" 2>&1
    grep -v "^\[" "$OUT/exact_norm_sweep_s11_hold_${px}.log" | tail -20
    snap
done
unset TRITON_PTXAS_PATH
t row_norm_exact 150 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
snap
bench 0 norm.rms_modulate 120 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 100 --cases flux,wan,hunyuan
