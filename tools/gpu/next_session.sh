#!/usr/bin/env bash
# The GPU work queued for the next session (one ~4-minute call on nvidia-h200-x2): the open
# questions session 5 left, in priority order.
#   GPU 1: exact rms_modulate at Wan: 77.8-81.4% of copy alone, 55-58% in CLI benches that ran
#          another case first (same kernel and inputs). If Nsight Compute is on the image, profile
#          the exact kernel in both situations (L2 hit rate of the second read of each row).
#   GPU 0: re-baseline the remaining shortfalls of issues 3 and 5 at the current code:
#          channel_rms_norm, group_norm_silu, causal_conv3d_cat_pad (contiguous), joint_qkv_cat.
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{
    CUDA_VISIBLE_DEVICES=$G2 timeout 120 python3 -m sgl_diffusion bench --op norm.rms_modulate --cases flux,wan \
        --out "$OUT/rms_modulate_flux_wan_bench_h200.json" > "$OUT/rms_modulate_flux_wan.log" 2>&1
    grep -v "^\[" "$OUT/rms_modulate_flux_wan.log" | tail -12
    if command -v ncu > /dev/null; then
        for cases in wan flux,wan; do
            CUDA_VISIBLE_DEVICES=$G2 timeout 150 ncu --kernel-name regex:_row_norm_exact_kernel --launch-count 3 \
                --section MemoryWorkloadAnalysis --section SpeedOfLight python3 -m sgl_diffusion bench \
                --op norm.rms_modulate --cases "$cases" --rep 3 > "$OUT/ncu_rms_modulate_${cases/,/_}.txt" 2>&1
        done
    else
        echo "no ncu on this image" | tee "$OUT/ncu_missing.txt"
    fi
    snap
} &
for op in norm.channel_rms_norm norm.group_norm_silu layout.causal_conv3d_cat_pad layout.joint_qkv_cat; do
    bench 0 "$op" 120
done
wait
snap
