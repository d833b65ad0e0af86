#!/usr/bin/env bash
# Session 17 run 5 (one nvidia-h200, ~2 minutes): the held slab's loads without the evict_first hint (run 4's
# finding) in the library: the public channel_rms_norm bench at C = 384 contiguous (21 x 240 x 416 and the
# bench shape), then the op's GPU lane.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s17r5
bench 0 norm.channel_rms_norm 100 --cases c384-240,c384
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s17_nohint.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s17_nohint.log"
snap
t channel_rms_norm 100 packages/sgl-diffusion-norm/tests/test_channel_rms_norm_gpu.py --durations=3
snap
