#!/usr/bin/env bash
# Session 6, first device call (nvidia-h200-x2, ~5 minutes):
#   GPU 0: the VAE norms with triton_math.silu's fast forms against the precise SiLU, and v1 tiles
#          around the launch rule (tools/gpu/vae_norm_sweep.py); then the channel_rms_norm and
#          group_norm_silu benches at the default rule.
#   GPU 1: exact rms_modulate at FLUX + Wan (the order that measured 55-58% at Wan), and Nsight
#          Compute on the exact kernel alone at Wan and after the FLUX case.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    CUDA_VISIBLE_DEVICES=$G2 timeout 120 python3 -m sgl_diffusion bench --op norm.rms_modulate --cases flux,wan \
        --out "$OUT/rms_modulate_flux_wan_bench_h200.json" > "$OUT/rms_modulate_flux_wan.log" 2>&1
    grep -v "^\[" "$OUT/rms_modulate_flux_wan.log" | tail -12
    for cases in wan flux,wan; do
        CUDA_VISIBLE_DEVICES=$G2 timeout 150 ncu --kernel-name regex:_row_norm_exact_kernel --launch-count 3 \
            --section MemoryWorkloadAnalysis --section SpeedOfLight python3 -m sgl_diffusion bench \
            --op norm.rms_modulate --cases "$cases" --rep 3 > "$OUT/ncu_rms_modulate_${cases/,/_}.txt" 2>&1
        grep -E "L2 Hit|DRAM Through|Duration|Memory Through" "$OUT/ncu_rms_modulate_${cases/,/_}.txt" | head -12
    done
    snap
} &
CUDA_VISIBLE_DEVICES=0 timeout 280 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_fast_silu_h200.json" \
    > "$OUT/vae_norm_sweep_fast_silu.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep_fast_silu.log" | tail -60
snap
for op in norm.channel_rms_norm norm.group_norm_silu; do
    bench 0 "$op" 100
done
wait
snap
