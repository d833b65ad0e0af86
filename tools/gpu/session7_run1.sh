#!/usr/bin/env bash
# Session 7, first call (nvidia-h200-x2, ~5 minutes): the exact LayerNorm kernel with its combine
# coefficients from a host table (64 registers on sm_90 instead of 136-141).
#   GPU 0: the build-choice sweep of layer_norm / ln_modulate at FLUX, Wan, HunyuanVideo (every
#          configuration checked torch.equal to eager at the production shape).
#   GPU 1: the exact GPU lane (40 signatures: the gate must verify, bits equal to eager), then the
#          layer_norm and ln_modulate benches (the exact kernel alone is one provider).
# Usage on the device machine, from the repo root: bash tools/gpu/session7_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s7a
{
    t row_norm_exact_s7 200 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
    cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s7.json" 2>/dev/null
    snap
    bench "$G2" norm.layer_norm 150 --cases flux,wan,hunyuan
    bench "$G2" norm.ln_modulate 150 --cases flux,wan,hunyuan
} &
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_layer_s7_h200.json" \
    layer_norm,ln_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_layer_s7.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_layer_s7.log" | tail -40
wait
snap
