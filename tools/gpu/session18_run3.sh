#!/usr/bin/env bash
# Session 18 run 3 (one nvidia-h200, ~8 minutes): the evict_first L2 hint, A/B, on every family that keeps it
# (tools/gpu/hint_ab.py): the library as committed ("hint") against a copy of packages/*/src with every
# "evict_first" in the *_triton.py files replaced by the default policy ("nohint"), in turn: hint, nohint,
# hint, nohint. The library's own provider only, after each case's check.
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
 norm.channel_rms_norm activation.gelu activation.silu_and_mul"
for k in 1 2; do
    CUDA_VISIBLE_DEVICES=0 timeout 140 python3 tools/gpu/hint_ab.py "$OUT/hint_ab_s18_h200_hint$k.json" hint $OPS \
        > "$OUT/hint_ab_s18_hint$k.log" 2>&1
    echo "hint #$k rc=$?"
    CUDA_VISIBLE_DEVICES=0 PYTHONPATH="/tmp/site:$NH" timeout 140 python3 tools/gpu/hint_ab.py \
        "$OUT/hint_ab_s18_h200_nohint$k.json" nohint $OPS > "$OUT/hint_ab_s18_nohint$k.log" 2>&1
    echo "nohint #$k rc=$?"
    snap
done
paste -d'|' <(grep -v "^\[" "$OUT/hint_ab_s18_hint1.log" | cut -c10-90) <(grep -v "^\[" "$OUT/hint_ab_s18_nohint1.log" | cut -c75-90) \
    <(grep -v "^\[" "$OUT/hint_ab_s18_hint2.log" | cut -c75-90) <(grep -v "^\[" "$OUT/hint_ab_s18_nohint2.log" | cut -c75-90)
grep -h "FAILED\|Traceback\|Error" "$OUT"/hint_ab_s18_*.log | head -20
