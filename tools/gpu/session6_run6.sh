#!/usr/bin/env bash
# Session 6, sixth device call (nvidia-h200-x2, ~5 minutes), at the adopted rules:
#   GPU 0: tools/gpu/cat_pad_sweep.py around the word kernel's rule (1024 words x 32 per thread),
#          then Nsight Compute on group_norm_silu's kernels at C = 384 channels_last_3d (v2).
#   GPU 1: the causal_conv3d_cat_pad, group_norm_silu and channel_rms_norm benches, then the GPU
#          lanes of the cat+pad kernels and the VAE norms.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run6.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6d
{
    bench "$G2" layout.causal_conv3d_cat_pad 100
    bench "$G2" norm.group_norm_silu 100
    bench "$G2" norm.channel_rms_norm 100
    t cat_pad 200 packages/sgl-diffusion-layout/tests/test_layout_gpu.py -k cat_pad
    t vae_norms 200 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
    snap
} &
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_words2_h200.json" \
    > "$OUT/cat_pad_sweep_words2.log" 2>&1
grep -v "^\[" "$OUT/cat_pad_sweep_words2.log" | grep -E "default|best|NOT|Error" | tail -8
snap
CUDA_VISIBLE_DEVICES=0 timeout 100 ncu --kernel-name regex:_gn_ --launch-count 3 --section SpeedOfLight \
    python3 -m sgl_diffusion bench --op norm.group_norm_silu --cases c384-cl --rep 3 \
    > "$OUT/ncu_group_norm_silu_v2_c384-cl.txt" 2>&1
grep -E "_gn_|Duration|DRAM Through" "$OUT/ncu_group_norm_silu_v2_c384-cl.txt" | head -12
snap
wait
snap
