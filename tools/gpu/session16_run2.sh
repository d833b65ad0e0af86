#!/usr/bin/env bash
# Session 16 run 2 (one nvidia-h200): channel_rms_norm over the whole Wan-VAE range: C = 96 and 384 at
# 21 x 240 x 416 and 21 x 480 x 832 (C = 384 there: 3.2e9 elements, past 2**31), both layouts, and the bench
# shape 21 x 120 x 208 for comparison with session 14.
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s16r2
bench 0 norm.channel_rms_norm 420 --cases c384,c384-240,c384-240-cl,c96-480,c96-480-cl,c384-480,c384-480-cl
