#!/usr/bin/env bash
# Session 8, sixth call (~3 minutes, one GPU): the exact RMSNorm kernels with a register cap
# (MAXNREG 48 / 56 / 64 / 80; sm_90 builds fit without spills): Nsight Compute at Wan (run 5) found
# exact rms_modulate latency-bound at 94 registers (20 warps per SM, 1.02 eligible warps per
# scheduler, 47% of the stall cycles on L1TEX scoreboards).
# Usage on the device machine, from the repo root: bash tools/gpu/session8_run6.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s8f
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s8_maxnreg_h200.json" \
    rms_modulate,rms_norm flux,wan,hunyuan > "$OUT/exact_norm_sweep_s8_maxnreg.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_s8_maxnreg.log" | tail -36
snap
