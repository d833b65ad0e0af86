#!/usr/bin/env bash
# Session 5, fourth device call (nvidia-h200-x2): layout (GPU lane; joint ops with the HunyuanVideo
# cases; build_varlen_meta's chunk-parallel form; causal_conv3d_cat_pad's contiguous kernel) and
# the rms_modulate question: the probe with torch.compile run first, then the bench's Wan case alone.
# Usage on the device machine, from the repo root: bash tools/gpu/session5_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    t layout 200 packages/sgl-diffusion-layout/tests
    snap
    CUDA_VISIBLE_DEVICES=$G2 timeout 100 python3 tools/gpu/rms_modulate_probe.py \
        "$OUT/rms_modulate_probe_compile_first_h200.json" --compile-first > "$OUT/rms_modulate_probe_cf.log" 2>&1
    grep -v "^\[" "$OUT/rms_modulate_probe_cf.log" | tail -12
    snap
    CUDA_VISIBLE_DEVICES=$G2 timeout 100 python3 -m sgl_diffusion bench --op norm.rms_modulate --cases wan \
        --out "$OUT/rms_modulate_wan_alone_bench_h200.json" > "$OUT/rms_modulate_wan_alone.log" 2>&1
    grep -v "^\[" "$OUT/rms_modulate_wan_alone.log" | tail -8
    snap
} &
for op in layout.build_varlen_meta layout.causal_conv3d_cat_pad layout.joint_qkv_cat layout.joint_split layout.nearest_upsample; do
    bench 0 "$op" 120
done
wait
snap
