#!/usr/bin/env bash
# Session 9, fourth call (~5 minutes, one GPU): group_norm_silu's new channels_last rule (two dense
# channel tiles, one wave of 2048 statistics warps, four 4 KB apply steps per program): the GPU
# lane at production shapes, the bench (channels_last and contiguous), the sweep around it.
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9d
t group_norm_silu_s9_final 150 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
snap
bench 0 norm.group_norm_silu 150 --cases c192-cl,c96-cl,c384-cl,c192,c384
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s9_final_h200.json" \
    group_norm_silu/c384-cl,group_norm_silu/c96-cl,group_norm_silu/c192-cl > "$OUT/vae_norm_sweep_s9_final.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s9_final.log" | grep -E "best|FAILED|Traceback|Error" | tail -8
snap
