#!/usr/bin/env bash
# Session 4, fourth device call (nvidia-h200-x2): the final numbers of this session's defaults.
#   GPU 1: VAE norms (streaming kernels): GPU lanes, old-vs-new sweep, benches.
#   GPU 0: GLU benches (default L2 policy) and exact RMSNorm benches (2 rows per program at FLUX).
# Usage on the device machine, from the repo root: bash tools/gpu/session4_run4.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out4
{
    CUDA_VISIBLE_DEVICES=$G2 timeout 100 python3 -m pytest packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py \
        packages/sgl-diffusion-norm/tests/test_group_norm_silu_gpu.py -m gpu -q -rfE --tb=short -p no:cacheprovider \
        > "$OUT/gpu_lane_vae_norm.log" 2>&1
    echo "vae lanes: $(tail -n 1 "$OUT/gpu_lane_vae_norm.log")"
    CUDA_VISIBLE_DEVICES=$G2 timeout 150 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_h200.json" \
        > "$OUT/vae_norm_sweep.log" 2>&1
    tail -n 12 "$OUT/vae_norm_sweep.log"
    snap
    bench "$G2" norm.channel_rms_norm 90
    bench "$G2" norm.group_norm_silu 110
} &
for op in activation.silu_and_mul activation.gelu_tanh_and_mul; do bench 0 "$op" 100; done
for op in norm.rms_norm norm.rms_modulate; do bench 0 "$op" 60; done
wait
snap
