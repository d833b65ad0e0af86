#!/usr/bin/env bash
# Session 6, profiling call for the next session (nvidia-h200-x2, ~3 minutes): Nsight Compute on
# the kernels still short of their targets, at the final rules of this session.
#   GPU 0: causal_conv3d_cat_pad's word kernel at Wan-VAE C = 96 (90.7%) and C = 384 (87.2%);
#          channel_rms_norm's v1 kernel on contiguous x (C = 96 / 384, 67-69%).
#   GPU 1: group_norm_silu's statistics and apply kernels on channels_last x (C = 96 / 384).
# Usage on the device machine, from the repo root: bash tools/gpu/session6_run11.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s6i
prof() {  # GPU NAME REGEX OP CASES
    CUDA_VISIBLE_DEVICES=$1 timeout 120 ncu --kernel-name "regex:$3" --launch-count 2 --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
        python3 -m sgl_diffusion bench --op "$4" --cases "$5" --rep 2 > "$OUT/ncu_$2.txt" 2>&1
    echo "== $2"; grep -E "^  _|Duration|DRAM Through|L2 Hit|Achieved Occupancy|Registers Per" "$OUT/ncu_$2.txt" | head -16
}
{
    prof "$G2" group_norm_silu_v2_final_c384-cl _gn_ norm.group_norm_silu c384-cl
    prof "$G2" group_norm_silu_v2_final_c96-cl _gn_ norm.group_norm_silu c96-cl
    snap
} &
prof 0 cat_pad_words_c96 _cat_pad_words layout.causal_conv3d_cat_pad wan-vae-96-contiguous
prof 0 cat_pad_words_c384 _cat_pad_words layout.causal_conv3d_cat_pad wan-vae-384-contiguous
prof 0 channel_rms_norm_v1_contig _channel_rms_kernel norm.channel_rms_norm c96,c384
wait
snap
