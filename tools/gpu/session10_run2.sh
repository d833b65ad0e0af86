#!/usr/bin/env bash
# Session 10, second call (~1 minute, one GPU): channel_rms_norm on contiguous x (C = 96 77.1%,
# C = 384 66.1% of copy; instruction- and latency-bound, session 9 run 11) with the two new
# v1 options, the output pass prefetching the next chunk and the slab held in registers, swept
# against the current rules under Triton's bundled ptxas and under torch's (the bench's).
# The first call's v1 builds failed to compile under the device's Triton 3.6 (a string constexpr
# taken from a default); fixed. Its group_norm_silu and cat+pad sweeps stand.
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10b
TORCH_PTXAS=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s10b_contig_h200.json" \
    channel_rms_norm/c384,channel_rms_norm/c96 > "$OUT/vae_norm_sweep_s10b_contig.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10b_contig.log" | tail -6
snap
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH=$TORCH_PTXAS timeout 150 python3 tools/gpu/vae_norm_sweep.py \
    "$OUT/vae_norm_sweep_s10b_contig_torchptxas_h200.json" channel_rms_norm/c384,channel_rms_norm/c96 \
    > "$OUT/vae_norm_sweep_s10b_contig_torchptxas.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10b_contig_torchptxas.log" | tail -6
