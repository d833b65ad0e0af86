#!/usr/bin/env bash
# Session 8, third call (~8 minutes, one GPU): layer_norm / ln_modulate exact by default. The GPU
# lanes whose defaults changed (the exact row norms' gate, the row-norm and ln_modulate lanes,
# the diffusers sites), the benches of the four row norms, and the channel_rms_norm contiguous
# sweep with fewer warps per slab and SiLU's fast forms.
# Usage on the device machine, from the repo root: bash tools/gpu/session8_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s8c
t row_norm_exact_s8 150 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s8_run3.json" 2>/dev/null
t row_norms_s8 150 packages/sgl-diffusion-norm/tests/test_row_norm_gpu.py packages/sgl-diffusion-norm/tests/test_ln_modulate_gpu.py
t sites_s8 150 packages/sgl-diffusion-sites/tests/test_sites_gpu.py
snap
bench 0 norm.layer_norm 60 --cases flux,wan,hunyuan
bench 0 norm.ln_modulate 90 --cases flux,wan,hunyuan,wan-per-token,wan-per-frame,wan-fp32mod
bench 0 norm.rms_modulate 60 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 60 --cases flux,wan,hunyuan
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_s8_contig_h200.json" \
    channel_rms_norm/c96,channel_rms_norm/c384 > "$OUT/vae_norm_sweep_s8_contig.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_s8_contig.log" | tail -4
snap
