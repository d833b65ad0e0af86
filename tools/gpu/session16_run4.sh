#!/usr/bin/env bash
# Session 16 run 4 (one nvidia-h200): the modulate kernels on a 1-D grid, tile-fastest against row-fastest program
# order (tools/gpu/indexed_tile_sweep.py at Wan and HunyuanVideo), then the modulate GPU lane.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s16r4
CUDA_VISIBLE_DEVICES=0 timeout 300 python3 tools/gpu/indexed_tile_sweep.py "$OUT/indexed_order_sweep_h200.json" \
    wan,hunyuan > "$OUT/indexed_order_sweep.log" 2>&1
grep -v "^\[" "$OUT/indexed_order_sweep.log" | tail -50
snap
t modulate 150 packages/sgl-diffusion-modulate/tests/test_modulate_gpu.py --durations=3
snap
