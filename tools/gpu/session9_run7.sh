#!/usr/bin/env bash
# Session 9, seventh call (~4 minutes, one GPU): group_norm_silu channels_last at C = 96 with rows
# of two positions (384-byte rows on 128-byte lines; pack=2) against one: the sweep, the GPU lane,
# the bench.
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run7.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9g
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s9_pack_h200.json" \
    group_norm_silu/c96-cl > "$OUT/vae_norm_sweep_s9_pack.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s9_pack.log" | grep -E "best|FAILED|Traceback|Error" | tail -4
snap
t group_norm_silu_s9_run7 150 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
snap
bench 0 norm.group_norm_silu 150 --cases c192-cl,c96-cl,c384-cl,c192,c384
