#!/usr/bin/env bash
# Session 14 run 5 (one nvidia-h200, ~3 minutes): channel_rms_norm contiguous C = 384: the held slab
# with gamma / bias loaded a chunk ahead, one CTA and a two-CTA cluster, interleaved twice
# (channel_cluster_sweep.py ops, torch's ptxas); Nsight Compute of the cluster rule's kernel and of a
# copy of the same x (tools/gpu/ncu_targets.py).
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s14r5
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 120 python3 tools/gpu/channel_cluster_sweep.py \
    "$OUT/channel_ops_ahead_s14_torchptxas_h200.json" ops > "$OUT/channel_ops_ahead_s14_torchptxas.log" 2>&1
grep -E "% of copy|FAILED|Traceback" "$OUT/channel_ops_ahead_s14_torchptxas.log" | sed -e 's/stream=False, block_c2=1, ahead=1, programs=0, fast=None, rows=0, //' | cut -c1-200
snap
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
CUDA_VISIBLE_DEVICES=0 TRITON_PTXAS_PATH="$TORCH_PTXAS" timeout 200 "$NCU" --profile-from-start off \
    --clock-control none --set full --import-source no -f -o "$OUT/ncu_s14" python3 tools/gpu/ncu_targets.py \
    copy:c384 channel_rms_norm:c384 > "$OUT/ncu_s14.log" 2>&1
tail -3 "$OUT/ncu_s14.log"
"$NCU" -i "$OUT/ncu_s14.ncu-rep" --csv --page details > "$OUT/ncu_s14_details.csv" 2>&1
rm -f "$OUT/ncu_s14.ncu-rep"
wc -c "$OUT"/ncu_*
snap
