#!/usr/bin/env bash
# Session 6, fifth device call (nvidia-h200-x2, ~6 minutes):
#   GPU 0: tools/gpu/vae_norm_sweep.py on the remaining VAE-norm shortfalls: channel_rms_norm on
#          contiguous x (v1 with unrolled chunk loops, whole-C tiles), group_norm_silu on
#          channels_last x (the rows statistics kernel of the v2 rule and its variants).
#   GPU 1: tools/gpu/cat_pad_sweep.py (the 16-bit word kernel against the flat kernel), the
#          causal_conv3d_cat_pad and group_norm_silu benches at the defaults, and the GPU lanes
#          of conv_pad and the VAE norms.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6c
{
    CUDA_VISIBLE_DEVICES=$G2 timeout 150 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_words_h200.json" \
        > "$OUT/cat_pad_sweep_words.log" 2>&1
    grep -v "^\[" "$OUT/cat_pad_sweep_words.log" | grep -E "default|best|FAIL|NOT|Error" | tail -8
    snap
    bench "$G2" layout.causal_conv3d_cat_pad 100
    bench "$G2" norm.group_norm_silu 100
    t cat_pad 200 packages/sgl-diffusion-layout/tests/test_layout_gpu.py -k cat_pad
    t vae_norms 200 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
    snap
} &
CUDA_VISIBLE_DEVICES=0 timeout 300 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s6_contig_cl_h200.json" \
    channel_rms_norm/c96,channel_rms_norm/c384,group_norm_silu/c96-cl,group_norm_silu/c384-cl,group_norm_silu/c192-cl \
    > "$OUT/vae_norm_sweep_s6_contig_cl.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s6_contig_cl.log" | grep -E "best|FAILED|Traceback|Error" | tail -12
snap
wait
snap
