#!/usr/bin/env bash
# Session 5, fifth device call (nvidia-h200-x2): joint ops with per-part device copies at video
# sizes, the cat_pad flat kernel's launch-rule sweep, the layout GPU lane, and which earlier bench
# case slows exact rms_modulate at Wan (alone it measured 77.8%, after FLUX and before HunyuanVideo 57%).
# Usage on the device machine, from the repo root: bash tools/gpu/session5_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    t layout 120 packages/sgl-diffusion-layout/tests
    snap
    for cases in flux,wan hunyuan,wan; do
        CUDA_VISIBLE_DEVICES=$G2 timeout 120 python3 -m sgl_diffusion bench --op norm.rms_modulate --cases $cases \
            --out "$OUT/rms_modulate_${cases/,/_}_bench_h200.json" > "$OUT/rms_modulate_${cases/,/_}.log" 2>&1
        grep -v "^\[" "$OUT/rms_modulate_${cases/,/_}.log" | tail -12
        snap
    done
} &
for op in layout.joint_qkv_cat layout.joint_split; do bench 0 "$op" 120; done
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_h200.json" \
    > "$OUT/cat_pad_sweep.log" 2>&1
grep -v "^\[" "$OUT/cat_pad_sweep.log" | tail -30
wait
snap
