#!/usr/bin/env bash
# The GPU work queued for the next session (one ~6-minute call on nvidia-h200-x2), in priority
# order: what session 4 changed after its device time ran out, and what it left unexplained.
#   GPU 0: `gelu` / `gelu_and_mul` with the fast erfc for 16-bit outputs (libdevice's erfcf held
#          gelu at 48-51% of copy, below eager), the unary tune, then `channel_rms_norm` at its
#          new channels_last rule (one tile ahead from 192 channels).
#   GPU 1: the activation GPU lane (the fast erfc's accuracy on hardware), then `rms_modulate`
#          exact at Wan: benches measured the default at 56% of copy, the sweeps at 77-78%.
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    t activation 90 packages/sgl-diffusion-activation/tests
    snap
    CUDA_VISIBLE_DEVICES=$G2 timeout 120 python3 tools/gpu/exact_norm_sweep.py "$OUT/exact_norm_sweep3_h200.json" \
        > "$OUT/exact_norm_sweep3.log" 2>&1
    tail -n 12 "$OUT/exact_norm_sweep3.log"
    bench "$G2" norm.rms_modulate 100
} &
CUDA_VISIBLE_DEVICES=0 timeout 40 python3 - > "$OUT/activation_tune_gelu.log" 2>&1 <<'PY'
import json, os, torch
from sgl_diffusion_core import bench
from sgl_diffusion_activation import activation_bench as ab
rows = ab.tune(torch.device("cuda"), ops=("gelu", "gelu_and_mul"), blocks=(1024,), warps=(2, 4), fasts=(True, False),
               kernels=("flat",))
json.dump({"env": bench.environment(torch.device("cuda")), "rows": rows},
          open(os.path.join(os.environ["OUT"], "activation_tune_gelu_h200.json"), "w"), indent=1)
for r in rows:
    print(r["op"], r["case"], r["num_warps"], "fast", int(r["fast"]), f"{100 * r['frac_of_copy']:.1f}%")
PY
grep -v "^\[" "$OUT/activation_tune_gelu.log" | tail -8
snap
for op in activation.gelu activation.gelu_and_mul norm.channel_rms_norm; do bench 0 "$op" 90; done
wait
snap
