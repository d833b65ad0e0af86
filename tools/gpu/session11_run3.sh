#!/usr/bin/env bash
# Session 11, third call (~5 minutes, one GPU): the exact row norms at the final HOLD rule
# (RMSNorm: held, two rows per program except up to 32 chunks from 16384 rows; LayerNorm: held
# from 8 chunks or below 16384 rows): the GPU lanes (the gate's bits at D 1536 / 2432 / 3072 /
# 5120, three modulation layouts) and the four benches at FLUX / Wan / HunyuanVideo.
# Usage on the device machine, from the repo root: bash tools/gpu/session11_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s11c
t row_norm_exact 150 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
t ln_modulate 120 packages/sgl-diffusion-norm/tests/test_ln_modulate_gpu.py
snap
bench 0 norm.rms_modulate 100 --cases flux,wan,hunyuan
bench 0 norm.ln_modulate 100 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 80 --cases flux,wan,hunyuan
bench 0 norm.layer_norm 80 --cases flux,wan,hunyuan
