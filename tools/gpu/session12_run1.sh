#!/usr/bin/env bash
# Session 12, device call 2 (call 1 ran next_session.sh at 9229cf8: WPR rejected, the row-norm lane
# cut at its 200 s limit after 24 passing tests). On one nvidia-h200:
#   the cat+pad word kernel with rows spanning frames (span) against the frame tiles;
#   channel_rms_norm at C = 384: the stream kernel over 128-byte runs (its tiles now held raw);
#   exact RMSNorm at FLUX: the held row against the rule's re-read, three times each, under both ptxas;
#   the rest of the exact row-norm lane (build choices at 16401 rows, graph capture, report).
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_1
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_s12_span_h200.json" \
    > "$OUT/cat_pad_sweep_s12_span.log" 2>&1
grep -v "^\[" "$OUT/cat_pad_sweep_s12_span.log" | tail -30
snap
vsweep s12_stream_torchptxas 170 channel_rms_norm/c384 TRITON_PTXAS_PATH="$TORCH_PTXAS"
grep "channel_rms_norm/c384" "$OUT/vae_norm_sweep_s12_stream_torchptxas.log" | grep -v "^\[" | tail -8
AB='[{}, {"HOLD": true}, {"HOLD": false}, {}, {"HOLD": true}, {"HOLD": false}, {}, {"HOLD": true}, {"HOLD": false}]'
for px in torch triton; do
    if [ "$px" = torch ]; then export TRITON_PTXAS_PATH="$TORCH_PTXAS"; else unset TRITON_PTXAS_PATH; fi
    CUDA_VISIBLE_DEVICES=0 timeout 120 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_s12_flux_$px.json" \
        rms_modulate,rms_norm flux "$AB" > "$OUT/exact_norm_sweep_s12_flux_$px.log" 2>&1
    grep -E "of copy|NOT|Error" "$OUT/exact_norm_sweep_s12_flux_$px.log" | tail -20
done
unset TRITON_PTXAS_PATH
snap
t row_norm_exact_rest 320 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py -k "build_choices or cuda_graph or zz" --durations=8
tail -n 14 "$OUT/gpu_lane_row_norm_exact_rest.log"
snap
