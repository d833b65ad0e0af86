#!/usr/bin/env bash
# Session 16 run 1 (one nvidia-h200): the remembered index check. The GPU lanes of the modulate ops and the
# varlen layouts, then the benches of the four ops that check an index (default = remembered check, plus
# check_index=False and check_index='always', the per-call check every call paid before).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s16r1
t modulate 150 packages/sgl-diffusion-modulate/tests/test_modulate_gpu.py --durations=3
t layout_varlen 100 packages/sgl-diffusion-layout/tests/test_layout_gpu.py -k varlen --durations=3
snap
bench 0 modulate.indexed_scale_shift 110
bench 0 modulate.indexed_gated_residual 110
bench 0 layout.varlen_pack_qkv 90
bench 0 layout.varlen_scatter 90
