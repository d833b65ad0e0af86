#!/usr/bin/env bash
# Session 5, third device call (nvidia-h200-x2): the exact RMSNorm kernel's build choices under
# both ptxas builds a process can end up with: Triton's bundled one (GPU 0) and torch's own, which
# torch.compile installs through TRITON_PTXAS_PATH for the rest of the process (GPU 1).
# Usage on the device machine, from the repo root: bash tools/gpu/session5_run3.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
TORCH_PTXAS=$(python3 -c "import pathlib, torch; print(pathlib.Path(torch.__file__).parent / 'bin' / 'ptxas')")
ls -l "$TORCH_PTXAS"; "$TORCH_PTXAS" --version | tail -n 2
python3 -c "from triton.backends.nvidia.compiler import get_ptxas; p = get_ptxas(90); print(p.path, p.version)"
sweep() {  # GPU LABEL [env...]
    local gpu=$1 label=$2
    shift 2
    env CUDA_VISIBLE_DEVICES=$gpu "$@" timeout 300 python3 tools/gpu/exact_norm_sweep.py \
        "$OUT/exact_norm_sweep_ptxas_${label}_h200.json" rms_modulate,rms_norm wan,flux,hunyuan \
        > "$OUT/exact_norm_sweep_ptxas_$label.log" 2>&1
    snap
}
sweep 0 triton &
sweep "$G2" torch TRITON_PTXAS_PATH="$TORCH_PTXAS" &
wait
snap
for l in triton torch; do echo "== $l"; grep -v "^\[" "$OUT/exact_norm_sweep_ptxas_$l.log" | grep -v "^  " | head -70; done
