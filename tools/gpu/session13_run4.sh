#!/usr/bin/env bash
# Session 13, fourth device call (~7 minutes, one nvidia-h200):
#   OUT_AHEAD: rows read twice (LayerNorm at HunyuanVideo: 6 chunks, 118800 rows) with the output pass's
#       loads of x and of the operands a group of chunks ahead; ln_modulate / layer_norm at HunyuanVideo
#       under torch's ptxas, and the held row with its operands ahead there.
#   The exact row norms' GPU lane (run 3 ran out of time after 29 passing tests): torch.equal at
#       D = 1536..5120 and the three layouts with the gate's report, then the build choices at D = 5120.
# Usage on the device machine, from the repo root: bash tools/gpu/session13_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s13_4
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 100 python3 tools/gpu/exact_norm_sweep.py \
    "$OUT/exact_norm_sweep_s13_out_ahead_torch_h200.json" ln_modulate,layer_norm hunyuan \
    '[{}, {"OUT_AHEAD": 1}, {"OUT_AHEAD": 2}, {}, {"OUT_AHEAD": 2}, {"HOLD": true, "MOD_AHEAD": 2}]' \
    > "$OUT/exact_norm_sweep_s13_out_ahead_torch.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_s13_out_ahead_torch.log" | tail -16
snap
export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report_s13.json"
t row_norm_exact 170 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py \
    -k "modulated_exact or plain_exact or zz" --durations=4
tail -n 6 "$OUT/gpu_lane_row_norm_exact.log"
snap
t row_norm_exact_choices 130 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py \
    -k "build_choices and 5120" --durations=4
tail -n 6 "$OUT/gpu_lane_row_norm_exact_choices.log"
snap
