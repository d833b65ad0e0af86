#!/usr/bin/env bash
# Session 5, last device call (nvidia-h200-x2): the exact RMSNorm kernel's output pass walking the
# chunks last to first (REVERSE_OUT), against the default, at FLUX / Wan / HunyuanVideo; rms_modulate
# on GPU 0 and rms_norm on GPU 1.
# Usage on the device machine, from the repo root: bash tools/gpu/session5_run8.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
sweep() {  # GPU OP
    CUDA_VISIBLE_DEVICES=$1 timeout 200 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_reverse_$2_h200.json" \
        "$2" wan,hunyuan,flux > "$OUT/exact_norm_sweep_reverse_$2.log" 2>&1
    snap
}
sweep 0 rms_modulate &
sweep "$G2" rms_norm &
wait
snap
for op in rms_modulate rms_norm; do grep -v "^\[" "$OUT/exact_norm_sweep_reverse_$op.log" | grep -E "default|REVERSE|best" ; done
