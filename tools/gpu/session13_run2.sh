#!/usr/bin/env bash
# Session 13, second device call (~6 minutes, one nvidia-h200):
#   MOD_AHEAD: the held row's output-chain operands (weight, scale, shift) loaded a group of chunks ahead
#       (run 1's Nsight Compute: 71% of exact rms_modulate's FLUX stall samples wait on those loads,
#       issued chunk by chunk after the previous chunk's store). rms_modulate at FLUX / Wan / HunyuanVideo
#       under torch's ptxas (the benches'), FLUX also under Triton's; ln_modulate (held at FLUX and Wan).
#       Every row torch.equal to eager; {} (the rule) and MOD_AHEAD 2 twice: a noise estimate.
#   channel_rms_norm contiguous C = 384: a persistent kernel whose tile loads Triton's pipeliner issues
#       as asynchronous copies through shared memory (tools/gpu/channel_pipe_probe.py).
# Usage on the device machine, from the repo root: bash tools/gpu/session13_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s13_2
CFG='[{}, {"MOD_AHEAD": 1}, {"MOD_AHEAD": 2}, {"MOD_AHEAD": 4}, {"MOD_AHEAD": 2, "MOD_EARLY": true}, {"MOD_AHEAD": 1, "MOD_EARLY": true}, {}, {"MOD_AHEAD": 2}]'
sweep() {  # NAME LIMIT OPS CASES CONFIGS [VAR=VALUE]
    local name=$1 lim=$2 ops=$3 cases=$4 cfg=$5
    shift 5
    CUDA_VISIBLE_DEVICES=0 env "$@" timeout "$lim" python3 tools/gpu/exact_norm_sweep.py \
        "$OUT/exact_norm_sweep_s13_${name}_h200.json" "$ops" "$cases" "$cfg" > "$OUT/exact_norm_sweep_s13_${name}.log" 2>&1
    grep -v "^\[" "$OUT/exact_norm_sweep_s13_${name}.log" | tail -40
    snap
}
sweep ahead_torch 170 rms_modulate flux,wan,hunyuan "$CFG" TRITON_PTXAS_PATH="$TORCH_PTXAS"
sweep ahead_triton 50 rms_modulate flux "$CFG"
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 tools/gpu/channel_pipe_probe.py "$OUT/channel_pipe_probe_h200.json" c384 \
    > "$OUT/channel_pipe_probe.log" 2>&1
grep -v "^\[" "$OUT/channel_pipe_probe.log" | tail -16
snap
sweep ahead_ln_torch 100 ln_modulate flux,wan '[{}, {"MOD_AHEAD": 1}, {"MOD_AHEAD": 2}, {"MOD_AHEAD": 4}, {}]' TRITON_PTXAS_PATH="$TORCH_PTXAS"
