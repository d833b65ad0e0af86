#!/usr/bin/env bash
# Session 4, fifth device call (nvidia-h200-x2, ~4 minutes): unary activations with the default
# L2 policy (A/B tune + benches with compile baselines), FLUX mounted vs eager at this commit,
# rms_modulate exact with 2 rows per program at FLUX.
# Usage on the device machine, from the repo root: bash tools/gpu/session4_run5.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out5
{
    CUDA_VISIBLE_DEVICES=$G2 timeout 120 python3 tools/gpu/sites_e2e.py --models flux --variants eager,exact,close \
        --budget-s 110 --out "$OUT/sites_e2e_flux_h200.json" > "$OUT/sites_e2e_flux.log" 2>&1
    tail -n 5 "$OUT/sites_e2e_flux.log"
    snap
    bench "$G2" norm.rms_modulate 100
} &
CUDA_VISIBLE_DEVICES=0 timeout 60 python3 - > "$OUT/activation_tune_unary.log" 2>&1 <<'PY'
import json, torch
from sgl_diffusion_core import bench
from sgl_diffusion_activation import activation_bench as ab
rows = ab.tune(torch.device('cuda'), ops=("gelu_tanh", "silu", "gelu"), blocks=(1024,), warps=(2,), fasts=(True,),
               evicts=(True, False))
json.dump({"env": bench.environment(torch.device('cuda')), "rows": rows},
          open("/tmp/run_out5/activation_tune_unary_evict_h200.json", "w"), indent=1)
for r in rows:
    print(r["op"], r["case"], "evict", int(r["evict"]), f"{100 * r['frac_of_copy']:.1f}%")
PY
cat "$OUT/activation_tune_unary.log" | grep -v "^\[" | tail -12
snap
for op in activation.gelu_tanh activation.silu activation.gelu; do bench 0 "$op" 75; done
wait
snap
