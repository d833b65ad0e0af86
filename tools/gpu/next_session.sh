#!/usr/bin/env bash
# The GPU work queued for the next session (one ~9-minute call on one nvidia-h200).
#   Session 18 dropped the evict_first L2 hint from conv_pad, copy, scale_shift, gated_residual and qk_norm
#   (tools/gpu/hint_ab.py: +1.1 to +5.1 points of copy at the production shapes) and ran out of device time
#   before the public benches (eager, torch.compile, copy side by side) could be re-run after the change.
#   First: those benches, including the ops that share the changed kernels and were not re-measured
#   (indexed_scale_shift, indexed_gated_residual, varlen pack / scatter, Ulysses / USP unpack and merge).
#   Then: the row norms (row_norm_triton / row_norm_exact_triton), mixed in the all-or-nothing A/B, need a
#   per-kernel A/B; channel_rms_norm's unheld paths were never reached without the hint (the A/B's processes
#   hit their limit first).
# Usage on the device machine, from the repo root: bash tools/gpu/next_session.sh SHA OUT
# (pass SHA as a literal: $(git rev-parse HEAD) evaluated on the device machine names the last landed commit)
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_next
bench 0 layout.causal_conv3d_cat_pad 90
bench 0 modulate.scale_shift 60
bench 0 modulate.gated_residual 60
bench 0 modulate.indexed_scale_shift 60
bench 0 modulate.indexed_gated_residual 60
bench 0 norm.qk_norm 60
bench 0 layout.ulysses_pack_qkv 60
bench 0 layout.joint_qkv_cat 60
t layout 120 packages/sgl-diffusion-layout/tests --durations=3
t modulate 60 packages/sgl-diffusion-modulate/tests --durations=3
