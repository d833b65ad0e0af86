#!/usr/bin/env bash
# Session 11, fifth call (~3 minutes, one GPU): the exact RMSNorm benches at the final rule (held
# from 16384 rows, capped at 128 registers above 32 chunks; FLUX read twice).
# Usage on the device machine, from the repo root: bash tools/gpu/session11_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s11e
bench 0 norm.rms_modulate 110 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 90 --cases flux,wan,hunyuan
