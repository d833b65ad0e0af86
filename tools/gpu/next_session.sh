#!/usr/bin/env bash
# The GPU work queued for the next session (one ~3-minute call on one nvidia-h200).
#   Session 17 found that channel_rms_norm's held slab ran 3% slower with the evict_first L2 hint on its loads
#   (85.4 -> 88.0% of copy without it; docs/benchmarks/README.md, session 17). 30 streaming loads in other kernels keep
#   that hint (and channel_rms_norm's unheld paths): activation (glu, math), layout (conv_pad, upsample, copy), modulate (scale_shift,
#   gated_residual), qk_norm, the row norms and group_norm_silu. Next: A/B each family without the hint (a
#   probe or a temporary constexpr), starting with group_norm_silu, whose "4x torch.compile" point at C = 192
#   channels_last_3d needs 90.4% of its two-pass bound (88.6% with the hint). Then re-measure with the benches:
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
bench 0 norm.group_norm_silu 240 --cases c96-cl,c192-cl,c384-cl,c96,c192,c384
bench 0 norm.channel_rms_norm 150 --cases c384-240,c384
