#!/usr/bin/env bash
# Session 4, first device call (queued by session 3; one ~8-minute call on nvidia-h200-x2, or two on
# nvidia-h200), in priority order. Each line is something session 3 changed but could not measure.
#   GPU 1: the GPU tests left unverified (group_norm_silu with its corrected check, the whole
#          row-norm lane, sites after the processor sites / under_compile / compile helper)
#          then sites end to end under_compile=auto vs fused (issue 7's compile + mounted target).
#   GPU 0: the benchmarks of changed launches: GLU activations (1024 x 4 warps), channel_rms_norm
#          (sweep-chosen rule), ln_modulate exact, gated_residual_norm_modulate and its launch
#          sweep (the default spills on sm_90: tools/gpu/gated_norm_sweep.py says why).
# Usage on the device machine, from the repo root: bash tools/gpu/session4_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    t group_norm_silu 120 packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py
    t row_norm 200 packages/sgl-diffusion-norm/tests/test_row_norm_gpu.py packages/sgl-diffusion-norm/tests/test_ln_modulate_gpu.py
    t sites 150 packages/sgl-diffusion-sites/tests
    snap
    for policy in auto fused; do
        CUDA_VISIBLE_DEVICES=$G2 timeout 240 python3 tools/gpu/sites_e2e.py --models flux,wan --wan-blocks 8 \
            --variants eager,compile,compile_exact,compile_close --under-compile "$policy" --budget-s 230 \
            --out "$OUT/sites_e2e_${policy}_h200.json" > "$OUT/sites_e2e_$policy.log" 2>&1
        tail -n 12 "$OUT/sites_e2e_$policy.log"
        snap
    done
} &
for op in activation.silu_and_mul activation.gelu_tanh_and_mul; do bench 0 "$op" 90; done
bench 0 norm.channel_rms_norm 90
bench 0 norm.ln_modulate 120 --cases flux,wan,hunyuan
bench 0 norm.gated_residual_norm_modulate 60
timeout 150 python3 tools/gpu/gated_norm_sweep.py "$OUT/gated_norm_sweep_h200.json" > "$OUT/gated_norm_sweep.log" 2>&1
tail -n 2 "$OUT/gated_norm_sweep.log"
wait
snap
