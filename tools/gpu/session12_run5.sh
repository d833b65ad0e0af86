#!/usr/bin/env bash
# Session 12, fifth device call (~2 minutes, one nvidia-h200): is the public exact op's extra 0.7-0.9 us
# at FLUX (run 4) GPU idle while the host launches? The probe's interleaved timing again, and with a
# sleep kernel queued first so the host is far ahead of the GPU.
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_5
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 tools/gpu/op_overhead_probe.py "$OUT/op_overhead_probe_backlog_h200.json" \
    flux > "$OUT/op_overhead_probe_backlog.log" 2>&1
grep -v "^\[" "$OUT/op_overhead_probe_backlog.log" | grep -v Warn | tail -16
snap
