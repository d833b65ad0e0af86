#!/usr/bin/env bash
# Session 12, ninth device call (~2 minutes, one nvidia-h200): the benches' L2 flush writing against
# reading its buffer, at FLUX (tools/gpu/flush_mode_probe.py).
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run9.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_9
CUDA_VISIBLE_DEVICES=0 timeout 110 python3 tools/gpu/flush_mode_probe.py "$OUT/flush_mode_probe_h200.json" \
    > "$OUT/flush_mode_probe.log" 2>&1
grep -v "^\[" "$OUT/flush_mode_probe.log" | tail -12
snap
