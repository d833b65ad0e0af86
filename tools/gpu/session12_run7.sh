#!/usr/bin/env bash
# Session 12, seventh device call (~2 minutes, one nvidia-h200): exact RMSNorm's held row under a
# register cap at D = 3072 (sm_90, Triton 3.6's ptxas: 80 registers uncapped, 64 / 72 capped without
# spills): 32 / 28 one-warp programs per SM instead of 25 (FLUX: 1.09 / 1.25 waves instead of 1.4),
# at FLUX and HunyuanVideo, two interleaved repeats under each ptxas.
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run7.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_7
AB='[{}, {"MAXNREG": 64}, {"MAXNREG": 72}, {}, {"MAXNREG": 64}, {"MAXNREG": 72}]'
for px in torch triton; do
    if [ "$px" = torch ]; then export TRITON_PTXAS_PATH="$TORCH_PTXAS"; else unset TRITON_PTXAS_PATH; fi
    CUDA_VISIBLE_DEVICES=0 timeout 100 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s12_cap_$px.json" \
        rms_modulate,rms_norm flux,hunyuan "$AB" > "$OUT/exact_norm_sweep_s12_cap_$px.log" 2>&1
    grep -E "of copy|NOT|Error" "$OUT/exact_norm_sweep_s12_cap_$px.log" | tail -24
    snap
done
