#!/usr/bin/env bash
# Session 6, second profiling call (nvidia-h200-x2, ~1 minute): Nsight Compute on the cat+pad word
# kernel at Wan-VAE C = 96 / 384 (contiguous; run 11 named the bench cases wrongly) and on
# group_norm_silu's rows apply kernel at C = 384 channels_last_3d.
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run12.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6j
prof() {  # GPU NAME REGEX OP CASES
    CUDA_VISIBLE_DEVICES=$1 timeout 100 ncu --kernel-name "regex:$3" --launch-count 1 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        python3 -m sgl_diffusion bench --op "$4" --cases "$5" --rep 2 > "$OUT/ncu_$2.txt" 2>&1
    echo "== $2"; grep -E "^  _|Duration|DRAM Through|L2 Hit|Achieved Occupancy|Registers Per" "$OUT/ncu_$2.txt" | head -8
}
prof "$G2" group_norm_silu_v2_final_apply_c384-cl _gn_apply norm.group_norm_silu c384-cl &
prof 0 cat_pad_words_c96 _cat_pad_words layout.causal_conv3d_cat_pad wan-vae-96
prof 0 cat_pad_words_c384 _cat_pad_words layout.causal_conv3d_cat_pad wan-vae-384
wait
snap
