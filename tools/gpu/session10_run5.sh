#!/usr/bin/env bash
# Session 10, fifth call (~5 minutes, one GPU): group_norm_silu's new tile rule (one padded channel
# tile where the smaller dense tile's rows are under 128 bytes: C = 96 in bf16) in its GPU lane and
# bench; contiguous channel_rms_norm's rules under a register cap (C = 384's hold kernel holds 121
# registers on sm_90: two 8-warp programs per SM; 80 fit three), swept under torch's ptxas.
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10e
TORCH_PTXAS=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
t group_norm_silu_s10_run5 150 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
snap
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH=$TORCH_PTXAS timeout 150 python3 tools/gpu/vae_norm_sweep.py \
    "$OUT/vae_norm_sweep_s10e_torchptxas_h200.json" channel_rms_norm/c384,channel_rms_norm/c96 \
    > "$OUT/vae_norm_sweep_s10e_torchptxas.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10e_torchptxas.log" | grep -E "max_registers=[0-9]|default|FAILED|Traceback" | tail -8
snap
bench 0 norm.group_norm_silu 150 --cases c96-cl,c192-cl,c384-cl
