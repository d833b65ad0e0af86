#!/usr/bin/env bash
# The GPU work queued for the next session (one ~8-minute call on one nvidia-h200): the open
# shortfalls session 11 left, re-measured at the current code, in priority order.
#   channel_rms_norm contiguous C = 384 (82.2-82.7%; 4-D 78.8%): session 10's Nsight Compute
#       (ncu_channel_rms_norm_c384_contig_hold_s10.txt) has the hold kernel at 121 registers, two
#       8-warp programs per SM (25% occupancy), 1.17 eligible warps, issue 60% busy: fewer
#       registers at the same 128-byte runs is the lead. The sweep re-measures the rules around it.
#   exact rms_modulate at FLUX (80.1%, read twice) and Wan (85.5%, held): a row spread over 2 / 4
#       warps (WPR, the same arithmetic; sm_90: 56 registers for the held FLUX row on 2 warps against
#       80-92 on one), held or read twice: the sweep, then the bench.
#   the cat+pad sweep at C = 384 contiguous (86.7-87.4%).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
# the exact row-norm lane with session 11's new case (RMSNorm's build choices at 16401 rows: the held
# row at the final rule has run on the GPU only in sweeps and benches)
t row_norm_exact 200 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
snap
vsweep torchptxas 150 channel_rms_norm/c384,channel_rms_norm/c192 TRITON_PTXAS_PATH="$TORCH_PTXAS"
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_wpr_h200.json" \
    rms_modulate,rms_norm flux,wan,hunyuan > "$OUT/exact_norm_sweep_wpr.log" 2>&1
grep -v "^\[" "$OUT/exact_norm_sweep_wpr.log" | grep -E "of copy|NOT|Error" | tail -40
snap
bench 0 norm.rms_modulate 150 --cases flux,wan
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_h200.json" \
    > "$OUT/cat_pad_sweep.log" 2>&1
grep -v "^\[" "$OUT/cat_pad_sweep.log" | tail -2
snap
