#!/usr/bin/env bash
# (tools/gpu/group_norm_pack_probe.py was removed with pack=2 after run 9; it is in git cb778ba)
# Session 9, ninth call (~1 minute, one GPU): run 8's probe again, under Triton's bundled ptxas and
# under torch's (which torch.compile installs as TRITON_PTXAS_PATH for the rest of a process, as in
# the bench): run 7's bench put pack=2 at 85.1%, the probe at 73% with the bundled ptxas.
# Usage on the device machine, from the repo root: bash tools/gpu/session9_run9.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s9i
TORCH_PTXAS=$(python3 -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
ls -l "$TORCH_PTXAS"
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 120 python3 tools/gpu/group_norm_pack_probe.py \
    "$OUT/group_norm_pack_probe_torch_ptxas_h200.json" 3 > "$OUT/group_norm_pack_probe_torch_ptxas.log" 2>&1
tail -9 "$OUT/group_norm_pack_probe_torch_ptxas.log"
CUDA_VISIBLE_DEVICES=0 timeout 120 python3 tools/gpu/group_norm_pack_probe.py \
    "$OUT/group_norm_pack_probe_triton_ptxas_h200.json" 2 > "$OUT/group_norm_pack_probe_triton_ptxas.log" 2>&1
tail -6 "$OUT/group_norm_pack_probe_triton_ptxas.log"
snap
