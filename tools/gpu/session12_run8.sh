#!/usr/bin/env bash
# Session 12, eighth device call (~3 minutes, one nvidia-h200): the copy reference measured as the
# rms_modulate bench measures it (copy_reference_probe.py's bench mode, FLUX and Wan).
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run8.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_8
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/copy_reference_probe.py "$OUT/copy_reference_probe_bench_h200.json" \
    bench > "$OUT/copy_reference_probe_bench.log" 2>&1
grep -v "^\[" "$OUT/copy_reference_probe_bench.log" | tail -16
snap
