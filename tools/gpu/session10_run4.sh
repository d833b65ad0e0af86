#!/usr/bin/env bash
# Session 10, fourth call (~7 minutes, one GPU): the new contiguous channel_rms_norm rules (C <= 128
# the slab rule with prefetch, 32 x 256 bytes on 4 warps; C <= 384 the slab held in three register
# tiles; wider C v1's tile with prefetch) and SiLU's new fast form, at production shapes: the GPU
# lanes of both VAE norms, the benches of both (with eager and torch.compile), then under torch's
# ptxas (the bench's) the hold tiles around C = 384's and group_norm_silu's C = 96 channels_last
# configurations (one padded tile measured 86.3% against the dense tiles' 83.3% in run 3).
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10d
TORCH_PTXAS=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
t channel_rms_norm_s10 150 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py
t group_norm_silu_s10 150 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
snap
bench 0 norm.channel_rms_norm 150
bench 0 norm.group_norm_silu 150
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH=$TORCH_PTXAS timeout 150 python3 tools/gpu/vae_norm_sweep.py \
    "$OUT/vae_norm_sweep_s10d_torchptxas_h200.json" channel_rms_norm/c384,group_norm_silu/c96-cl \
    > "$OUT/vae_norm_sweep_s10d_torchptxas.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10d_torchptxas.log" | grep -E "default|FAILED|Traceback" | tail -4
snap
