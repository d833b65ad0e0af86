#!/usr/bin/env bash
# Session 14 run 12 (one nvidia-h200, ~2 minutes): channel_rms_norm's public op at the final code, bf16 at
# the Wan-VAE bench cases and C = 384 at 21 x 240 x 416 (eager, torch.compile, same-run copy).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r12
bench 0 norm.channel_rms_norm 240 --cases c384,c384-240,c96,c192,c384-cl,c96-cl,c384-2d
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s14_final.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s14_final.log"
snap
