#!/usr/bin/env bash
# Session 8, fourth call (~5 minutes, one GPU): channel_rms_norm's slab rule on contiguous x up to
# 128 channels (v1's kernel, 64 channels x 128-byte runs, 4 warps, SiLU's fast forms: 77.3% at
# C = 96 in run 3's sweep, against 69.1%): its GPU lane and bench; the ln_modulate lane with the
# exact default; the rms_modulate bench (run 3's was cut by its time limit).
# Usage on the device machine, from the repo root: bash tools/gpu/session8_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s8d
t channel_rms_norm_s8 150 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py
t ln_modulate_s8 120 packages/sgl-diffusion-norm/tests/test_ln_modulate_gpu.py
snap
bench 0 norm.channel_rms_norm 90 --cases c96,c96-cl,c384,c384-cl
bench 0 norm.rms_modulate 150 --cases flux,wan,hunyuan
