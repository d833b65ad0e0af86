#!/usr/bin/env bash
# Session 16 run 3 (one nvidia-h200): TileConfig sweep of the indexed modulate kernels and their plain forms at
# Wan 720p (tools/gpu/indexed_tile_sweep.py), indexed_scale_shift at 91.3% of copy there against the 92% target.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s16r3
CUDA_VISIBLE_DEVICES=0 timeout 400 python3 tools/gpu/indexed_tile_sweep.py "$OUT/indexed_tile_sweep_h200.json" wan \
    > "$OUT/indexed_tile_sweep.log" 2>&1
grep -v "^\[" "$OUT/indexed_tile_sweep.log" | tail -30
snap
