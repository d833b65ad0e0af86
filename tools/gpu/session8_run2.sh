#!/usr/bin/env bash
# Session 8, second call (~5 minutes, one GPU): the exact row-norm kernel with a persistent grid
# (PERSIST programs per SM walking the row blocks), so the rows whose second read should hit L1 / L2
# are bounded by the grid rather than by occupancy (exact rms_modulate at Wan: 94 registers, ~20
# one-warp rows of 10 KB in flight per SM; Nsight Compute measured an L2 hit rate of 51%). The sweep
# over all four exact ops, then the exact GPU lane with the build the sweep favours is not yet the
# default (run 3 decides).
# Usage on the device machine, from the repo root: bash tools/gpu/session8_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s8b
CUDA_VISIBLE_DEVICES=0 timeout 240 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s8_persist_h200.json" \
    rms_modulate,rms_norm,ln_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_s8_persist.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_s8_persist.log" | tail -10
snap
