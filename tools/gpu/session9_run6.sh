#!/usr/bin/env bash
# Session 9, sixth call (~5 minutes, one GPU): the GPU lanes of the VAE norms at the final code
# (group_norm_silu's new channels_last rule: two dense channel tiles, 2 KB apply steps), the bench of
# group_norm_silu (channels_last and contiguous), and channel_rms_norm on contiguous x with the
# output pass over the chunks last to first (REVERSE).
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run6.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9f
t group_norm_silu_s9_run6 150 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
t channel_rms_norm_s9_run6 150 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py
snap
bench 0 norm.group_norm_silu 150 --cases c192-cl,c96-cl,c384-cl,c192,c384
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s9_reverse_h200.json" \
    channel_rms_norm/c384,channel_rms_norm/c96 > "$OUT/vae_norm_sweep_s9_reverse.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s9_reverse.log" | grep -E "best|FAILED|Traceback|Error" | tail -4
snap
