#!/usr/bin/env bash
# Session 18 run 2 (one nvidia-h200, warm after run 1, ~7 minutes): the public group_norm_silu bench at its six
# cases and its GPU lane, after run 1's change (statistics loads evict_last, apply loads unhinted, apply
# programs last first).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s18r2
bench 0 norm.group_norm_silu 270 --cases c96-cl,c192-cl,c384-cl,c96,c192,c384
t group_norm_silu 280 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py --durations=3
snap
