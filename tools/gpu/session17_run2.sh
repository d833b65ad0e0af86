#!/usr/bin/env bash
# Session 17 run 2 (one nvidia-h200, ~4 minutes): the two Wan-VAE points of issue 3 still argued, measured
# today with the public benches: channel_rms_norm contiguous C = 384 at 21 x 240 x 416 (and the bench shape)
# three times in separate processes, and group_norm_silu against today's torch.compile at the bench's
# Wan-VAE cases plus the contiguous ones (the "4x torch.compile" point).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s17r2
for k in a b c; do
    bench 0 norm.channel_rms_norm 150 --cases c384-240,c384
    mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s17_$k.json"
    mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s17_$k.log"
done
bench 0 norm.group_norm_silu 240 --cases c96-cl,c192-cl,c384-cl,c96,c192,c384
mv "$OUT/group_norm_silu_bench_h200.json" "$OUT/group_norm_silu_bench_h200_s17.json"
mv "$OUT/group_norm_silu_bench.log" "$OUT/group_norm_silu_bench_s17.log"
snap
