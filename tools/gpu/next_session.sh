#!/usr/bin/env bash
# The GPU work queued for the next session (one ~5-minute call on one nvidia-h200): the open
# questions session 12 left, in priority order.
#   The copy reference at FLUX's size: a copy of 2 x 28.3 MB took 18.4-19.1 us in session 12's probes
#       (copy_reference_probe_s12_h200.json, op_overhead_probe_s12_backlog_h200.json) but 20.8-21.6 us
#       inside the rms_modulate / rms_norm benches and the exact-norm sweeps, same function: every
#       FLUX-sized "% of copy" may read 10-15% high (exact rms_modulate at FLUX: 84.2% in the bench,
#       70% against the probes' copy). The probe's bench mode measures the copy as the bench does, after
#       the case's allocations and check, at FLUX and Wan: find which step slows it, then fix the
#       benches' reference (or explain it) before any FLUX-sized claim.
#   channel_rms_norm contiguous C = 384 (81.9-83.1%): the hold kernel at 121 registers, two 8-warp
#       programs per SM; session 12 rejected the stream kernel over 128-byte runs (43-57%).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
CUDA_VISIBLE_DEVICES=0 timeout 240 python3 tools/gpu/copy_reference_probe.py "$OUT/copy_reference_probe_bench_h200.json" \
    bench > "$OUT/copy_reference_probe_bench.log" 2>&1
grep -v "^\[" "$OUT/copy_reference_probe_bench.log" | tail -16
snap
bench 0 norm.rms_modulate 90 --cases flux
