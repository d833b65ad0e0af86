#!/usr/bin/env bash
# Session 10, sixth call (~5 minutes, one GPU): fewer instructions in contiguous channel_rms_norm
# (sm_90, C = 384's hold kernel: 1848 -> 1632 per thread, 96 values): the chunks' row pointers
# computed once, held raw values widened by PTX (one instruction per value), the inverse norm from
# PTX's approximate square root and reciprocal. Core's triton_math tests with the PTX forms (CUDA
# only), the GPU lane, the contiguous sweep under torch's ptxas, and the bench.
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run6.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10f
TORCH_PTXAS=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 -m pytest packages/sgl-diffusion-core/tests/test_triton_math.py -q -rfEs \
    -p no:cacheprovider > "$OUT/gpu_core_triton_math_s10.log" 2>&1
echo "triton_math: $(tail -n 1 "$OUT/gpu_core_triton_math_s10.log")"
t channel_rms_norm_s10_run6 150 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py
snap
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH=$TORCH_PTXAS timeout 150 python3 tools/gpu/vae_norm_sweep.py \
    "$OUT/vae_norm_sweep_s10f_torchptxas_h200.json" channel_rms_norm/c384,channel_rms_norm/c96 \
    > "$OUT/vae_norm_sweep_s10f_torchptxas.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10f_torchptxas.log" | grep -E "default|FAILED|Traceback" | tail -4
snap
bench 0 norm.channel_rms_norm 150 --cases c96,c384,c384-2d,c96-cl,c192-cl,c384-cl
