#!/usr/bin/env bash
# The GPU work queued for the next session (one ~6-minute call on one nvidia-h200), in priority order.
#   Re-baseline under the reading L2 flush (bench.FLUSH = "read" since session 12's last commit; every
#       earlier record used the writing flush, which added 2.2-2.7 us to every FLUX-sized call by an
#       amount that depended on where the buffers sat, flush_mode_probe_s12_h200.json): the exact
#       row-norm benches at FLUX, Wan, HunyuanVideo (exact rms_modulate at FLUX: 78.8-84.2% across
#       session 12's runs, below its 85% target).
#   channel_rms_norm contiguous C = 384 (81.9-83.1%): the hold kernel at 121 registers, two 8-warp
#       programs per SM; session 12 rejected the stream kernel over 128-byte runs (43-57%). The sweep
#       re-measures the rules around it under the new flush.
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
bench 0 norm.rms_modulate 110 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 90 --cases flux,wan,hunyuan
bench 0 norm.ln_modulate 110 --cases flux,wan,hunyuan
vsweep torchptxas 120 channel_rms_norm/c384 TRITON_PTXAS_PATH="$TORCH_PTXAS"
