#!/usr/bin/env bash
# Session 13, first device call (~8 minutes, one nvidia-h200):
#   Nsight Compute (full set, clocks left alone) on the two cases still short of issue 3's targets,
#       beside the copy of the same bytes and the kernels that do meet them: exact rms_modulate at
#       FLUX (held row, 78.8-84.2% in session 12) against the close kernel (94-96%) and exact
#       rms_norm (86-90%); channel_rms_norm contiguous C = 384 (81.9-83.1%) (tools/gpu/ncu_targets.py)
#   then session 12's queue (tools/gpu/next_session.sh): the row-norm benches re-baselined under the
#       reading L2 flush, and the channel_rms_norm C = 384 sweep.
# Usage on the device machine, from the repo root: bash tools/gpu/session13_run1.sh SHA OUT
set -uo pipefail
source tools/gpu/device_env.sh "$1" "$2" /tmp/run_out_s13_1
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
echo "ncu: $NCU"
CUDA_VISIBLE_DEVICES=0 timeout 200 "$NCU" --profile-from-start off --clock-control none --set full \
    --import-source no -f -o "$OUT/ncu_s13" python3 tools/gpu/ncu_targets.py \
    copy:flux rms_modulate_exact:flux rms_modulate_close:flux rms_norm_exact:flux copy:c384 channel_rms_norm:c384 \
    > "$OUT/ncu.log" 2>&1
tail -5 "$OUT/ncu.log"
"$NCU" -i "$OUT/ncu_s13.ncu-rep" --csv --page details > "$OUT/ncu_details.csv" 2>&1
"$NCU" -i "$OUT/ncu_s13.ncu-rep" --csv --page raw > "$OUT/ncu_raw.csv" 2>&1
"$NCU" -i "$OUT/ncu_s13.ncu-rep" --csv --page source --print-source sass \
    --kernel-name regex:_row_norm_exact > "$OUT/ncu_source_exact.csv" 2>&1 || true
wc -c "$OUT"/ncu_*
snap
bench 0 norm.rms_modulate 110 --cases flux,wan,hunyuan
bench 0 norm.rms_norm 90 --cases flux,wan,hunyuan
bench 0 norm.ln_modulate 110 --cases flux,wan,hunyuan
vsweep torchptxas 120 channel_rms_norm/c384 TRITON_PTXAS_PATH="$TORCH_PTXAS"
