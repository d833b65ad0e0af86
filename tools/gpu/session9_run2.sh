#!/usr/bin/env bash
# Session 9, second call (~8 minutes, one GPU): group_norm_silu channels_last with the rows kernels'
# two dense channel tiles (C = 384: 256 + 128, no masked lanes) and the per-channel coefficients
# written by the finalize kernel. The sweep (split against one padded tile, statistics and apply
# variants), the GPU lane at production shapes, the bench.
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9b
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s9_split_h200.json" \
    group_norm_silu/c384-cl,group_norm_silu/c96-cl,group_norm_silu/c192-cl > "$OUT/vae_norm_sweep_s9_split.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s9_split.log" | grep -E "best|FAILED|Traceback|Error" | tail -8
snap
t group_norm_silu_s9 150 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
snap
bench 0 norm.group_norm_silu 120 --cases c192-cl,c96-cl,c384-cl
