#!/usr/bin/env bash
# Session 13, fifth device call (~4 minutes, one nvidia-h200), at the final rules (exact RMSNorm's held rows
# load their operands ahead; exact LayerNorm's rows read twice issue the output pass's loads one chunk
# ahead): the ln_modulate and layer_norm benches at FLUX / Wan / HunyuanVideo.
# Usage on the device machine, from the repo root: bash tools/gpu/session13_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s13_5
bench 0 norm.ln_modulate 120 --cases flux,wan,hunyuan
bench 0 norm.layer_norm 100 --cases flux,wan,hunyuan
