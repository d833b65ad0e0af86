#!/usr/bin/env bash
# Session 10, third call (~6 minutes, one GPU): after run 2 (contiguous channel_rms_norm: hold
# 32 x 128 x 3 on 4 warps 83.0% at C = 96, prefetch 64 x 64 x 6 on 8 warps 73.0% at C = 384), the
# held slab widened through its bits (fewer registers) and SiLU's fast form without the sign
# split (2 instructions fewer per value, in every kernel that uses triton_math.silu): the whole
# VAE-norm sweep (every case of both ops, so the rows and group-norm kernels show the SiLU change
# too), then the contiguous channel_rms_norm cases again under torch's ptxas (the bench's).
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10c
TORCH_PTXAS=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s10c_h200.json" \
    > "$OUT/vae_norm_sweep_s10c.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10c.log" | grep -E "default|FAILED|Traceback|skipped" | tail -14
snap
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH=$TORCH_PTXAS timeout 150 python3 tools/gpu/vae_norm_sweep.py \
    "$OUT/vae_norm_sweep_s10c_contig_torchptxas_h200.json" channel_rms_norm/c384,channel_rms_norm/c96 \
    > "$OUT/vae_norm_sweep_s10c_contig_torchptxas.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10c_contig_torchptxas.log" | grep -E "default|FAILED|Traceback" | tail -4
snap
