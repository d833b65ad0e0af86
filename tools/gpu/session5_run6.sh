#!/usr/bin/env bash
# Session 5, sixth device call (nvidia-h200-x2): causal_conv3d_cat_pad and joint_qkv_cat at the
# rules chosen from run 5 (8 KB flat programs; device copies from 1 GiB moved), and the layout lane.
# Usage on the device machine, from the repo root: bash tools/gpu/session5_run6.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out
{ t layout 120 packages/sgl-diffusion-layout/tests; snap; } &
for op in layout.causal_conv3d_cat_pad layout.joint_qkv_cat; do bench 0 "$op" 120; done
wait
snap
