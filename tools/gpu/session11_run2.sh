#!/usr/bin/env bash
# Session 11, second call (~6 minutes, one GPU): the held row (HOLD) for the exact LayerNorm kernel
# (VEC's chunks) and RMSNorm with 2 / 4 rows per program (FLUX, 82.8% at one row), at FLUX / Wan /
# HunyuanVideo; every configuration checked torch.equal to eager by the sweep.
# Usage on the device machine, from the repo root: bash tools/gpu/session11_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s11b
sw() {
    CUDA_VISIBLE_DEVICES=0 timeout "$2" python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s11_$1_h200.json" \
        "$3" flux,wan,hunyuan > "$OUT/exact_norm_sweep_s11_$1.log" 2>&1
    grep -v "^\[" "$OUT/exact_norm_sweep_s11_$1.log" | grep -E "of copy|NOT|Error" | tail -40
    snap
}
sw hold2_triton 200 ln_modulate,layer_norm,rms_modulate
TRITON_PTXAS_PATH=$TORCH_PTXAS sw hold2_torch 150 ln_modulate,rms_modulate
