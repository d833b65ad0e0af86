#!/usr/bin/env bash
# Session 10, ninth call (~2 minutes, one GPU): causal_conv3d_cat_pad on contiguous x (C = 384
# 86.7%, target 90%): the 16-bit word kernel's new runs form (a program writes a run of words of
# one output frame, row and column by division, instead of a [rows, next_pow2(row words)] tile
# whose lanes past a row idle: 18% of them at Wan's 105-word rows) swept against the row tiles,
# every configuration torch.equal at the Wan-VAE shapes; the layout GPU tests of cat+pad (> 2**31
# elements included) at the current rule.
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run9.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10i
t cat_pad_s10 150 packages/sgl-diffusion-layout/tests/test_layout_gpu.py -k "cat_pad"
snap
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_s10_runs_h200.json" \
    > "$OUT/cat_pad_sweep_s10_runs.log" 2>&1
grep -v "^\[" "$OUT/cat_pad_sweep_s10_runs.log" | grep -E "runs=True|default|NOT|Traceback" | tail -30
snap
