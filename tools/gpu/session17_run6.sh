#!/usr/bin/env bash
# Session 17 run 6 (one nvidia-h200, warm after run 5, ~90 s): the public channel_rms_norm bench at the Wan-VAE
# range's high end after run 5's change (the held slab's loads without the evict_first hint). This call ran as
# the equivalent inline command at 0ab7ab5 (the same `bench` line, its JSON renamed afterwards here), so this
# script was written after the run, for the record.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s17r6
bench 0 norm.channel_rms_norm 130 --cases c384-480,c96-480
mv "$OUT/channel_rms_norm_bench_h200.json" "$OUT/channel_rms_norm_bench_h200_s17_nohint_480.json"
mv "$OUT/channel_rms_norm_bench.log" "$OUT/channel_rms_norm_bench_s17_nohint_480.log"
snap
