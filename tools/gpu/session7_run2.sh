#!/usr/bin/env bash
# Session 7, second call (nvidia-h200-x2, ~4 minutes): the exact LayerNorm kernel with the row
# resident in registers (up to 15 chunks: tiles of 8, 4, 2, 1 chunks loaded at once, reused by the
# output; run 1 measured the loop version at 51-63% of copy).
#   GPU 0: the build-choice sweep of layer_norm / ln_modulate at FLUX, Wan, HunyuanVideo (every
#          configuration checked torch.equal to eager at the production shape).
#   GPU 1: the exact GPU lane (40 signatures: the gate must verify, bits equal to eager), then the
#          layer_norm and ln_modulate benches (the exact kernel alone is one provider).
# Usage on the device machine, from the repo root: bash tools/gpu/session7_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s7b
{
    t row_norm_exact_s7_resident 200 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
    cp row_norm_gate_report.json "$OUT/row_norm_gate_report_h200_s7_resident.json" 2>/dev/null
    snap
    bench "$G2" norm.layer_norm 150 --cases flux,wan,hunyuan
    bench "$G2" norm.ln_modulate 150 --cases flux,wan,hunyuan
} &
CUDA_VISIBLE_DEVICES=0 timeout 330 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_layer_s7_resident_h200.json" \
    layer_norm,ln_modulate flux,wan,hunyuan > "$OUT/exact_norm_sweep_layer_s7_resident.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_layer_s7_resident.log" | tail -40
wait
snap
