#!/usr/bin/env bash
# Session 10, first call (~2 minutes, one GPU): channel_rms_norm on contiguous x (C = 96 77.1%,
# C = 384 66.1% of copy; instruction- and latency-bound, session 9 run 11) with the two new
# v1 options, the output pass prefetching the next chunk and the slab held in registers, swept
# against the current rules under Triton's bundled ptxas and under torch's (the bench's).
# Usage on the device machine, from the repo root: bash tools/gpu/session10_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s10a
TORCH_PTXAS=$(python3 -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s10_contig_h200.json" \
    channel_rms_norm/c384,channel_rms_norm/c96 > "$OUT/vae_norm_sweep_s10_contig.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10_contig.log" | tail -6
snap
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH=$TORCH_PTXAS timeout 150 python3 tools/gpu/vae_norm_sweep.py \
    "$OUT/vae_norm_sweep_s10_contig_torchptxas_h200.json" channel_rms_norm/c384,channel_rms_norm/c96 \
    > "$OUT/vae_norm_sweep_s10_contig_torchptxas.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10_contig_torchptxas.log" | tail -6
snap
# the other open shortfalls at the current code: group_norm_silu channels_last C = 96, cat+pad at C = 384
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s10_gn_h200.json" \
    group_norm_silu/c96-cl > "$OUT/vae_norm_sweep_s10_gn.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s10_gn.log" | tail -3
snap
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_s10_h200.json" \
    > "$OUT/cat_pad_sweep_s10.log" 2>&1
grep -v "^\[" "$OUT/cat_pad_sweep_s10.log" | tail -6
snap
