#!/usr/bin/env bash
# Session 18 run 1 (one nvidia-h200, ~3 minutes): group_norm_silu's L2 hints and apply-pass order
# (tools/gpu/gn_order_probe.py) at the bench cases, bf16.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s18r1
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 400 python3 tools/gpu/gn_order_probe.py \
    "$OUT/gn_order_probe_s18_h200.json" c192-cl c96-cl c384-cl c192 c384 c96 > "$OUT/gn_order_probe_s18.log" 2>&1
echo "rc=$?"
grep -v "^\[" "$OUT/gn_order_probe_s18.log" | cut -c1-200 | tail -110
snap
