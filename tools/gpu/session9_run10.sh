#!/usr/bin/env bash
# Session 9, tenth call (~3 minutes, one GPU): group_norm_silu channels_last with the rows apply's
# coefficients reloaded at every step (apply_reload: fewer registers; run 5's apply held 95) against
# the default, in the sweep around the default.
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run10.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9j
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s9_reload_h200.json" \
    group_norm_silu/c96-cl,group_norm_silu/c384-cl,group_norm_silu/c192-cl > "$OUT/vae_norm_sweep_s9_reload.log" 2>&1
grep -E "default|reload" "$OUT/vae_norm_sweep_s9_reload.log" | grep -v "^\[" | cut -c1-60,300- | head -12
grep -v "^\[" "$OUT/vae_norm_sweep_s9_reload.log" | grep -E "best|FAILED|Traceback|Error" | tail -4
snap
