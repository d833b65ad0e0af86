#!/usr/bin/env bash
# Session 12, fourth device call (~3 minutes, one nvidia-h200): why the public exact op is 1-1.4 us
# slower than its kernel alone at FLUX in run 3's benches (tools/gpu/op_overhead_probe.py, under
# Triton's and torch's ptxas), and the rms_modulate bench at FLUX once more (its spread).
# Usage on the device machine, from the repo root: bash tools/gpu/session12_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s12_4
CUDA_VISIBLE_DEVICES=0 timeout 100 python3 tools/gpu/op_overhead_probe.py "$OUT/op_overhead_probe_triton_h200.json" \
    flux,wan > "$OUT/op_overhead_probe_triton.log" 2>&1
grep -v "^\[" "$OUT/op_overhead_probe_triton.log" | tail -30
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 100 python3 tools/gpu/op_overhead_probe.py \
    "$OUT/op_overhead_probe_torch_h200.json" flux > "$OUT/op_overhead_probe_torch.log" 2>&1
grep -v "^\[" "$OUT/op_overhead_probe_torch.log" | grep -E "interleaved|Error|Traceback" | tail -6
snap
bench 0 norm.rms_modulate 60 --cases flux
