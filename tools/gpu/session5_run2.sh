#!/usr/bin/env bash
# Session 5, second device call (nvidia-h200-x2): gelu / gelu_and_mul with _gelu_fast (one
# reciprocal, one exp2; 22 sm_90 instructions per element instead of 59), the activation GPU lane
# (every bf16 / fp16 value against the fp64 oracle on hardware), and the rms_modulate probe.
# Usage on the device machine, from the repo root: bash tools/gpu/session5_run2.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    t activation 150 packages/sgl-diffusion-activation/tests
    snap
    CUDA_VISIBLE_DEVICES=$G2 timeout 150 python3 tools/gpu/rms_modulate_probe.py "$OUT/rms_modulate_probe_h200.json" \
        > "$OUT/rms_modulate_probe.log" 2>&1
    grep -v "^\[" "$OUT/rms_modulate_probe.log" | tail -30
    snap
} &
CUDA_VISIBLE_DEVICES=0 timeout 90 python3 - > "$OUT/activation_tune_gelu.log" 2>&1 <<'PY'
import json, os, torch
from sgl_diffusion_core import bench
from sgl_diffusion_activation import activation_bench as ab
dev = torch.device("cuda")
rows = ab.tune(dev, ops=("gelu",), blocks=(512, 1024, 2048), warps=(1, 2, 4), fasts=(True,))
rows += ab.tune(dev, ops=("gelu_and_mul",), blocks=(1024, 2048), warps=(2, 4, 8), fasts=(True,),
                kernels=("flat", "tiles"))
json.dump({"env": bench.environment(dev), "rows": rows},
          open(os.path.join(os.environ["OUT"], "activation_tune_gelu_h200.json"), "w"), indent=1)
PY
grep -v "^\[" "$OUT/activation_tune_gelu.log" | tail -40
snap
for op in activation.gelu activation.gelu_and_mul; do bench 0 "$op" 90; done
wait
snap
