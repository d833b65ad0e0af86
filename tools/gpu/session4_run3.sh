#!/usr/bin/env bash
# Session 4, third device call (nvidia-h200-x2).
#   GPU 1: GPU lanes of the changed kernels (exact row norms with ROWS / unrolling and the gate
#          report, layout with the rows / replicate kernels, activation), the layout sweep (old vs
#          new launches), then the layout benches with compile baselines.
#   GPU 0: GLU tune (evict policy x kernel x tile), inductor's own GLU kernel source, the exact
#          row-norm sweep (rows per program, output-loop unroll), the exact row-norm benches.
# Usage on the device machine, from the repo root: bash tools/gpu/session4_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out3
export SGL_NORM_GATE_REPORT="$OUT/row_norm_gate_report_h200.json"
{
    t row_norm_exact 150 packages/sgl-diffusion-norm/tests/test_row_norm_exact_gpu.py
    t layout 120 packages/sgl-diffusion-layout/tests
    t activation 90 packages/sgl-diffusion-activation/tests
    snap
    CUDA_VISIBLE_DEVICES=$G2 timeout 130 python3 tools/gpu/layout_sweep.py "$OUT/layout_sweep_h200.json" \
        > "$OUT/layout_sweep.log" 2>&1
    grep -E "%.*->|->|old|new" "$OUT/layout_sweep.log" | tail -16
    snap
    for op in layout.joint_qkv_cat layout.joint_split layout.nearest_upsample; do bench "$G2" "$op" 70; done
} &
timeout 120 python3 - > "$OUT/activation_tune.log" 2>&1 <<'PY'
import json, torch
from sgl_diffusion_core import bench
from sgl_diffusion_activation import activation_bench as ab
rows = ab.tune(torch.device('cuda'), ops=("silu_and_mul", "gelu_tanh_and_mul"), blocks=(1024, 2048),
               warps=(4, 8), fasts=(True,), evicts=(True, False))
json.dump({"env": bench.environment(torch.device('cuda')), "rows": rows},
          open("/tmp/run_out3/activation_tune_glu_evict_h200.json", "w"), indent=1)
for op in ("silu_and_mul", "gelu_tanh_and_mul"):
    for case in ("flux_mlp", "wan_ffn"):
        mine = sorted((r for r in rows if r["op"] == op and r["case"] == case), key=lambda r: -r["frac_of_copy"])
        for r in mine[:3]:
            print(op, case, r["kernel"], r["block"], r["num_warps"], "evict", int(r["evict"]),
                  f"{100 * r['frac_of_copy']:.1f}%")
PY
tail -n 12 "$OUT/activation_tune.log"
TORCH_LOGS=output_code timeout 90 python3 - > "$OUT/inductor_glu.log" 2>&1 <<'PY'
import torch, torch.nn.functional as F
for D in (12288, 13824):
    x = torch.randn(64, 2 * D, device="cuda", dtype=torch.bfloat16)
    f = torch.compile(lambda x: F.silu(x[..., :D]) * x[..., D:], dynamic=False)
    f(x)
    torch._dynamo.reset()
PY
grep -n "def triton\|tl.load\|tl.store\|XBLOCK\|num_warps\|triton_heuristics\|eviction" "$OUT/inductor_glu.log" | head -40
snap
timeout 150 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep2_h200.json" > "$OUT/exact_norm_sweep2.log" 2>&1
tail -n 12 "$OUT/exact_norm_sweep2.log"
snap
for op in norm.rms_norm norm.rms_modulate; do bench 0 "$op" 60; done
wait
snap
