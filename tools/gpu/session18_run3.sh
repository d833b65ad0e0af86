#!/usr/bin/env bash
# Session 18 run 3 (one nvidia-h200, at most ~8 minutes): the evict_first L2 hint, A/B, on every family that keeps it
# (tools/gpu/hint_ab.py): the library as committed ("hint") against a copy of packages/*/src with every
# "evict_first" in the *_triton.py files replaced by the default policy ("nohint"), in turn: hint, nohint,
# nohint, hint (each process at most 110 s). The library's own provider only, after each case's check. The
# activation kernels are left out: session 3 measured their hint against the default policy already.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s18r3
NH=/tmp/nohint_src
rm -rf "$NH" && mkdir -p "$NH"
for d in packages/*/src; do cp -r "$d"/. "$NH"/; done
find "$NH" -name "*_triton.py" -exec sed -i 's/"evict_first"/""/g' {} +
echo "nohint tree: $(grep -rl evict_first "$NH" --include=*_triton.py | wc -l) *_triton.py files still name evict_first (comments)"
OPS="layout.causal_conv3d_cat_pad layout.nearest_upsample layout.joint_qkv_cat layout.joint_split
 layout.usp_split_heads layout.ulysses_pack_qkv modulate.scale_shift modulate.gated_residual norm.qk_norm
 norm.layer_norm norm.rms_norm norm.ln_modulate norm.rms_modulate norm.gated_residual_norm_modulate
 norm.channel_rms_norm"
ab() {  # ab LABEL K [VAR=VALUE ...]: one process of hint_ab.py
    local label=$1 k=$2
    shift 2
    CUDA_VISIBLE_DEVICES=0 env "$@" timeout 110 python3 tools/gpu/hint_ab.py "$OUT/hint_ab_s18_h200_$label$k.json" \
        "$label" $OPS > "$OUT/hint_ab_s18_$label$k.log" 2>&1
    echo "$label #$k rc=$?"
    snap
}
ab hint 1
ab nohint 1 PYTHONPATH="/tmp/site:$NH"
ab nohint 2 PYTHONPATH="/tmp/site:$NH"
ab hint 2
paste -d'|' <(grep -v "^\[" "$OUT/hint_ab_s18_hint1.log" | cut -c10-90) <(grep -v "^\[" "$OUT/hint_ab_s18_nohint1.log" | cut -c75-90) \
    <(grep -v "^\[" "$OUT/hint_ab_s18_hint2.log" | cut -c75-90) <(grep -v "^\[" "$OUT/hint_ab_s18_nohint2.log" | cut -c75-90)
grep -h "FAILED\|Traceback\|Error" "$OUT"/hint_ab_s18_*.log | head -20
