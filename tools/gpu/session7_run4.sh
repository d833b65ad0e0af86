#!/usr/bin/env bash
# Session 7, fourth call (~3 minutes, one GPU): the exact LayerNorm kernel at its new default
# (VEC: one vector load per chunk; EVEN where every chunk is full): the exact GPU lane (bits equal
# to eager at D 1536 / 2432 / 3072 / 5120 and the three modulation layouts, gate states) and the
# layer_norm / ln_modulate benches.
# Usage on the device machine, from the repo root: bash tools/gpu/session7_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s7d
t row_norm_exact_s7_vec 200 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s7.json" 2>/dev/null
snap
bench "$G2" norm.layer_norm 150 --cases flux,wan,hunyuan
bench "$G2" norm.ln_modulate 150 --cases flux,wan,hunyuan
snap
