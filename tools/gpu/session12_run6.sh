#!/usr/bin/env bash
# Session 12, sixth device call (~2 minutes, one nvidia-h200): the steadiness of the benches' copy
# reference at FLUX's size (tools/gpu/copy_reference_probe.py), and the cat+pad bench once more at the
# new rule (C = 384 contiguous measured 90.0%, its sweep 89.9%: the spread around the target).
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run6.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_6
CUDA_VISIBLE_DEVICES=0 timeout 60 python3 tools/gpu/copy_reference_probe.py "$OUT/copy_reference_probe_h200.json" \
    > "$OUT/copy_reference_probe.log" 2>&1
grep -v "^\[" "$OUT/copy_reference_probe.log" | tail -9
snap
bench 0 layout.causal_conv3d_cat_pad 120
