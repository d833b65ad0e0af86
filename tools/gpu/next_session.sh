#!/usr/bin/env bash
# The GPU work queued for the next session (one ~8-minute call on nvidia-h200-x2, or two on
# nvidia-h200), in priority order. Each line is something session 3 changed but could not measure.
#   GPU 1: the GPU tests left unverified (group_norm_silu with its corrected check, the whole
#          row-norm lane, sites after the processor sites / under_compile / compile helper)
#          then sites end to end under_compile=auto vs fused (issue 7's compile + mounted target).
#   GPU 0: the benchmarks of changed launches: GLU activations (1024 x 4 warps), channel_rms_norm
#          (sweep-chosen rule), ln_modulate exact, gated_residual_norm_modulate and its launch
#          sweep (the default spills on sm_90: tools/gpu/gated_norm_sweep.py says why).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
SHA="$1"
FINAL="$2"
OUT=/tmp/run_out
mkdir -p "$OUT" "$FINAL"
snap() { tar czf "$FINAL/results.tgz" -C "$OUT" .; }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
G2=$(( $(nvidia-smi -L | wc -l) - 1 ))
t() {  # log name, time limit, pytest args...
    local name=$1 lim=$2
    shift 2
    CUDA_VISIBLE_DEVICES=$G2 timeout "$lim" python3 -m pytest "$@" -m gpu -q -rfE --tb=short -p no:cacheprovider \
        > "$OUT/gpu_lane_$name.log" 2>&1
    echo "$name: $(tail -n 1 "$OUT/gpu_lane_$name.log")"
}
bench() {  # op, time limit, extra args...
    local op=$1 lim=$2
    shift 2
    timeout "$lim" python3 -m sgl_diffusion bench --op "$op" --out "$OUT/${op#*.}_bench_h200.json" "$@" \
        > "$OUT/${op#*.}_bench.log" 2>&1
    grep -v "^\[" "$OUT/${op#*.}_bench.log" | tail -12
    snap
}
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
for op in activation.silu_and_mul activation.gelu_tanh_and_mul; do bench "$op" 90; done
bench norm.channel_rms_norm 90
bench norm.ln_modulate 120 --cases flux,wan,hunyuan
bench norm.gated_residual_norm_modulate 60
timeout 150 python3 tools/gpu/gated_norm_sweep.py "$OUT/gated_norm_sweep_h200.json" > "$OUT/gated_norm_sweep.log" 2>&1
tail -n 2 "$OUT/gated_norm_sweep.log"
wait
snap
