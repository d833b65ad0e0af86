#!/usr/bin/env bash
# The GPU work queued for the next session (one ~5-minute call on one nvidia-h200): the open
# shortfalls session 8 left, re-measured at the current code, in priority order.
#   exact rms_modulate at FLUX / Wan (79.7 / 77.9%): the bench, then Nsight Compute's source view of
#       the exact kernel (session 8: latency-bound, 94 registers, 1.02 eligible warps per scheduler;
#       a register cap and a persistent grid both measured worse).
#   group_norm_silu channels_last (84.8 / 81.2 / 78.7% in session 6, not re-measured since) and
#       channel_rms_norm contiguous (C = 96 77.2%, C = 384 67.1%): tools/gpu/vae_norm_sweep.py.
#   the cat+pad sweep at C = 384 contiguous (87.2%).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
bench 0 norm.rms_modulate 150 --cases flux,wan
CUDA_VISIBLE_DEVICES=0 timeout 150 ncu --kernel-name regex:_row_norm_exact_kernel --launch-count 1 --set full \
    --import-source yes python3 -m sgl_diffusion bench --op norm.rms_modulate --cases wan --rep 3 \
    > "$OUT/ncu_rms_modulate_wan_full.txt" 2>&1
snap
CUDA_VISIBLE_DEVICES=0 timeout 200 python3 tools/gpu/vae_norm_sweep.py "$OUT/vae_norm_sweep_h200.json" \
    channel_rms_norm/c384,group_norm_silu/c96-cl,group_norm_silu/c384-cl,group_norm_silu/c192-cl \
    > "$OUT/vae_norm_sweep.log" 2>&1
grep -v "^\[" "$OUT/vae_norm_sweep.log" | grep -E "best|FAILED|Traceback" | tail -8
snap
CUDA_VISIBLE_DEVICES=0 timeout 150 python3 tools/gpu/cat_pad_sweep.py "$OUT/cat_pad_sweep_h200.json" \
    > "$OUT/cat_pad_sweep.log" 2>&1
snap
