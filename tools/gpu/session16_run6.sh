#!/usr/bin/env bash
# Session 16 run 6 (one nvidia-h200): after the review moved the (row, tile) grid into core (TileConfig.grid,
# triton_math.program_tile) and dropped the row-fastest option: the modulate and activation GPU lanes, then the
# modulate benches again.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s16r6
t modulate 150 packages/sgl-diffusion-modulate/tests/test_modulate_gpu.py --durations=3
t activation 150 packages/sgl-diffusion-activation/tests/ --durations=3
snap
for op in scale_shift gated_residual indexed_scale_shift indexed_gated_residual; do
    bench 0 "modulate.$op" 100
done
