#!/usr/bin/env bash
# Session 4, second device call (nvidia-h200-x2): measure what the first call's results changed.
#   GPU 1: GPU lanes of the changed kernels (activation: the flat GLU kernel; norm: the exact
#          row norms with the hardware FMA, the gated rule), then Wan end to end under_compile=auto
#          once more (compile vs compile + mounted: the first call had them 0.5% apart).
#   GPU 0: GLU launch sweep (flat vs tile kernel), GLU benches with compile baselines, the
#          gated-norm sweep (LayerNorm and RMSNorm) and bench, the exact row-norm sweep.
# Usage on the device machine, from the repo root: bash tools/gpu/session4_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out2
{
    t activation 120 packages/sgl-diffusion-activation/tests
    t row_norm_exact 150 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
    t row_norm 150 packages/sgl-diffusion-norm/tests/test_row_norm_gpu.py
    snap
    CUDA_VISIBLE_DEVICES=$G2 timeout 200 python3 tools/gpu/sites_e2e.py --models wan --wan-blocks 8 \
        --variants eager,compile,compile_exact,compile_close --under-compile auto --budget-s 190 --reps 5 \
        --out "$OUT/sites_e2e_wan_auto_h200.json" > "$OUT/sites_e2e_wan_auto.log" 2>&1
    tail -n 7 "$OUT/sites_e2e_wan_auto.log"
    snap
} &
timeout 150 python3 - > "$OUT/activation_tune.log" 2>&1 <<'PY'
import json, torch
from sgl_diffusion_core import bench
from sgl_diffusion_activation import activation_bench as ab
rows = ab.tune(torch.device('cuda'), ops=("silu_and_mul", "gelu_tanh_and_mul"), blocks=(512, 1024, 2048),
               warps=(2, 4, 8), fasts=(True,))
json.dump({"env": bench.environment(torch.device('cuda')), "rows": rows},
          open("/tmp/run_out2/activation_tune_glu_h200.json", "w"), indent=1)
for op in ("silu_and_mul", "gelu_tanh_and_mul"):
    for case in ("flux_mlp", "wan_ffn"):
        mine = sorted((r for r in rows if r["op"] == op and r["case"] == case), key=lambda r: -r["frac_of_copy"])
        for r in mine[:3]:
            print(op, case, r["kernel"], r["block"], r["num_warps"], f"{100 * r['frac_of_copy']:.1f}%")
PY
tail -n 12 "$OUT/activation_tune.log"
snap
for op in activation.silu_and_mul activation.gelu_tanh_and_mul; do bench 0 "$op" 100; done
bench 0 norm.gated_residual_norm_modulate 60
timeout 120 python3 tools/gpu/gated_norm_sweep.py "$OUT/gated_norm_sweep_h200.json" > "$OUT/gated_norm_sweep.log" 2>&1
tail -n 4 "$OUT/gated_norm_sweep.log"
snap
timeout 150 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep_h200.json" > "$OUT/exact_norm_sweep.log" 2>&1
tail -n 12 "$OUT/exact_norm_sweep.log"
wait
snap
