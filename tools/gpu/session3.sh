#!/usr/bin/env bash
# Session 3 GPU work, in parts that each fit one 10-minute device command:
#   part 1: NCCL check (2 GPUs), the GPU lanes of norm / layout / activation / rope / sites in
#           parallel with a warm-up of every benchmark (compile caches filled, 2 reps, thrown
#           away), then the norm benchmarks, one at a time.
#   part 2: the activation launch sweep, the rope, activation and layout benchmarks (compile
#           caches warm when the machine is still held).
#   part 3: the sites GPU lane, then sites end to end
#   part 4: re-benchmarks after the fixes, the norm tests part 1 cut off, a launch sweep, sites again (FLUX.1-dev, Wan2.1-14B blocks): tools/gpu/sites_e2e.py.
# Usage on the device machine, from the repo root: bash tools/gpu/session3.sh PART SHA OUT
# Results: many files under /tmp/run_out, returned as $OUT/results.tgz (refreshed after every
# section, so a killed run keeps what finished).
set -uo pipefail
PART="$1"
SHA="$2"
FINAL="$3"
OUT=/tmp/run_out
mkdir -p "$OUT" "$FINAL"
snap() { tar czf "$FINAL/results.tgz" -C "$OUT" .; }
if [ ! -d /tmp/site ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
NGPU=$(nvidia-smi -L | wc -l)
t0=$(date +%s)
stamp() { echo "== $1 at $(( $(date +%s) - t0 ))s"; }

gpu_tests() {  # package, GPU, time limit
    CUDA_VISIBLE_DEVICES=$2 timeout "$3" python3 -m pytest "packages/$1/tests" -m gpu -q -rfE -s --tb=short \
        -p no:cacheprovider > "$OUT/gpu_lane_${1#sgl-diffusion-}.log" 2>&1
    echo "$1: $(tail -1 "$OUT/gpu_lane_${1#sgl-diffusion-}.log")"
}
bench() {  # op, time limit, extra args...
    local op=$1 lim=$2
    shift 2
    timeout "$lim" python3 -m sgl_diffusion bench --op "$op" --out "$OUT/${op#*.}_bench_h200.json" "$@" \
        > "$OUT/${op#*.}_bench.log" 2>&1
    echo "$op (rc $?):"
    grep -v "^\[" "$OUT/${op#*.}_bench.log" | tail -14
    snap
}
warm() {  # op [args]: one throw-away pass that fills the compile caches
    local op=$1
    shift
    timeout 150 python3 -m sgl_diffusion bench --op "$op" --rep 2 --out "/tmp/warm/${op#*.}.json" "$@" \
        > "/tmp/warm/${op#*.}.log" 2>&1
    echo "warm $op rc $?"
}
cases_of() {  # the bench cases of an op: Wan-720p q/k/v for the q/k/v-sized layout ops
    case "$1" in
        layout.ulysses*|layout.usp*|layout.*varlen*) echo "--cases wan" ;;
    esac
}
export -f warm cases_of
mkdir -p /tmp/warm

NORM_OPS="norm.layer_norm norm.rms_norm norm.rms_modulate norm.gated_residual_norm_modulate norm.qk_norm
          norm.channel_rms_norm norm.group_norm_silu"
ROPE_OPS="rope.apply_rope_qk rope.qk_norm_rope"
ACT_OPS="activation.silu_and_mul activation.gelu_tanh_and_mul activation.gelu_tanh"
LAYOUT_OPS="layout.ulysses_pack_qkv layout.ulysses_unpack_qkv layout.ulysses_pack_out layout.ulysses_unpack_out
            layout.usp_merge_heads layout.usp_split_heads layout.build_varlen_meta layout.varlen_pack_qkv
            layout.varlen_scatter layout.joint_qkv_cat layout.joint_split layout.causal_conv3d_cat_pad
            layout.nearest_upsample"

if [ "$PART" = 1 ]; then
    { nvidia-smi --query-gpu=name,driver_version --format=csv
      python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } \
        | tee "$OUT/gpu.txt"
    stamp "nccl"
    if [ "$NGPU" -ge 2 ]; then
        timeout 150 python3 tools/gpu/nccl_ulysses_check.py "$OUT/nccl_ulysses_check.json" > "$OUT/nccl.log" 2>&1
        tail -2 "$OUT/nccl.log"
    fi
    snap
    stamp "tests + warm-up"
    G2=$(( NGPU - 1 ))
    export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report.json"
    gpu_tests sgl-diffusion-norm 0 260 &
    { gpu_tests sgl-diffusion-layout "$G2" 120; gpu_tests sgl-diffusion-activation "$G2" 80;
      gpu_tests sgl-diffusion-rope "$G2" 60; } &
    # warm-up of every benchmark, 4 at a time, alternating GPUs
    i=0
    for op in $NORM_OPS $ROPE_OPS $ACT_OPS $LAYOUT_OPS; do
        line="$(( i % NGPU )) $op $(cases_of "$op")"
        echo "${line% }"  # no trailing blank: xargs -L would join the next line
        i=$(( i + 1 ))
    done | timeout 250 xargs -P 4 -L 1 bash -c 'CUDA_VISIBLE_DEVICES=$0 warm "${@}"' > "$OUT/warm.log" 2>&1 &
    wait
    pkill -f "rep 2 --out /tmp/warm" && sleep 2  # a warm-up cut by the phase's limit
    tail -20 "$OUT/warm.log"
    snap
    stamp "norm benchmarks"
    for op in $NORM_OPS; do bench "$op" 60; done
    stamp "done"
elif [ "$PART" = 2 ]; then
    stamp "activation sweep"
    timeout 150 python3 -c "
import json, sys, torch
from sgl_diffusion_activation import activation_bench as ab
rows = ab.tune(torch.device('cuda'), warps=(2, 4))
json.dump(rows, open('$OUT/activation_tune_h200.json', 'w'), indent=1)
for key in sorted({(r['op'], r['case']) for r in rows}):
    mine = [r for r in rows if (r['op'], r['case']) == key]
    best = max(mine, key=lambda r: r['frac_of_copy'])
    dflt = [r for r in mine if r['block'] == 2048 and r['num_warps'] == 2 and r['flat'] and r['fast']]
    print(key, 'best', {k: best[k] for k in ('block', 'num_warps', 'flat', 'fast', 'frac_of_copy')},
          'default', dflt[0]['frac_of_copy'] if dflt else None)
" > "$OUT/activation_tune.log" 2>&1
    tail -5 "$OUT/activation_tune.log"
    snap
    stamp "rope, activation, layout benchmarks"
    for op in $ROPE_OPS; do bench "$op" 60; done
    for op in $ACT_OPS; do bench "$op" 40; done
    for op in $LAYOUT_OPS; do bench "$op" 30 $(cases_of "$op"); done
    stamp "done"
elif [ "$PART" = 3 ]; then
    stamp "sites GPU lane"
    gpu_tests sgl-diffusion-sites 0 120
    snap
    stamp "sites end to end"
    timeout 420 python3 tools/gpu/sites_e2e.py --out "$OUT/sites_e2e_h200.json" "${@:4}" 2>&1 | tee "$OUT/sites_e2e.log"
    snap
    stamp "done"
elif [ "$PART" = 4 ]; then
    # the last call: GPU 1 runs the GPU tests the first call cut off or that changed since, then
    # sites end to end; GPU 0 the benchmarks after the fixes, in order of priority
    G2=$(( NGPU - 1 ))
    {
        CUDA_VISIBLE_DEVICES=$G2 timeout 80 python3 -m pytest packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py \
            -m gpu -k "split_matrix or vae_shapes or chooses" --maxfail=6 -q -rfE --tb=short -p no:cacheprovider \
            > "$OUT/gpu_lane_group_norm_silu.log" 2>&1
        CUDA_VISIBLE_DEVICES=$G2 timeout 90 python3 -m pytest packages/sgl-diffusion-norm/tests/test_row_norm_gpu.py \
            packages/sgl-diffusion-norm/tests/test_ln_modulate_gpu.py -m gpu -q -rfE --tb=short -p no:cacheprovider \
            > "$OUT/gpu_lane_row_norm.log" 2>&1
        snap
        gpu_tests sgl-diffusion-layout "$G2" 35
        gpu_tests sgl-diffusion-activation "$G2" 60
        gpu_tests sgl-diffusion-sites "$G2" 50
        snap
        CUDA_VISIBLE_DEVICES=$G2 timeout 120 python3 tools/gpu/sites_e2e.py --out "$OUT/sites_e2e_h200.json" \
            "${@:4}" > "$OUT/sites_e2e.log" 2>&1
        snap
    } &
    stamp "benchmarks"
    for op in norm.layer_norm norm.rms_norm norm.rms_modulate; do bench "$op" 60 --cases flux,wan,hunyuan; done
    bench norm.gated_residual_norm_modulate 45
    for op in $ACT_OPS; do bench "$op" 30; done
    bench norm.channel_rms_norm 45
    for op in layout.causal_conv3d_cat_pad layout.nearest_upsample layout.joint_qkv_cat layout.joint_split; do
        bench "$op" 30
    done
    timeout 70 python3 tools/gpu/channel_rms_norm_sweep.py "$OUT/channel_rms_norm_sweep_h200.json" \
        > "$OUT/channel_rms_norm_sweep.log" 2>&1
    tail -4 "$OUT/channel_rms_norm_sweep.log"
    snap
    stamp "benchmarks done"
    wait
    tail -n 3 "$OUT/gpu_lane_group_norm_silu.log" "$OUT/gpu_lane_row_norm.log"
    tail -14 "$OUT/sites_e2e.log"
    stamp "done"
fi
snap
