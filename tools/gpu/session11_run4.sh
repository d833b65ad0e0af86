#!/usr/bin/env bash
# Session 11, fourth call (~5 minutes, one GPU): the held RMSNorm row with a register cap of 128
# (maxnreg; Triton 3.6's bundled ptxas builds it with 147 registers uncapped at D = 5120, 118
# capped) against uncapped and the re-reading kernel, under both ptxas; the rms_modulate bench.
# Usage on the device machine, from the repo root: bash tools/gpu/session11_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s11d
sw() {
    CUDA_VISIBLE_DEVICES=0 timeout "$2" python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s11_cap_$1_h200.json" \
        rms_modulate,rms_norm flux,wan,hunyuan > "$OUT/exact_norm_sweep_s11_cap_$1.log" 2>&1
    grep -v "^\[" "$OUT/exact_norm_sweep_s11_cap_$1.log" | grep -E "of copy|NOT|Error" | tail -20
    snap
}
sw triton 120
TRITON_PTXAS_PATH=$TORCH_PTXAS sw torch 120
bench 0 norm.rms_modulate 90 --cases flux,wan,hunyuan
