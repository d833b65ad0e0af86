set -uo pipefail
OUT=/tmp/run_out6; mkdir -p $OUT "$2"
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=${PKG_PATHS%:} PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$1"
CUDA_VISIBLE_DEVICES=0 timeout 30 python3 - > $OUT/gelu_tune.log 2>&1 <<'PY'
import json, torch
from sgl_diffusion_core import bench
from sgl_diffusion_activation import activation_bench as ab
rows = ab.tune(torch.device('cuda'), ops=("gelu", "gelu_and_mul"), blocks=(1024,), warps=(2, 4), fasts=(True,),
               kernels=("flat",))
json.dump({"env": bench.environment(torch.device('cuda')), "rows": rows}, open("/tmp/run_out6/activation_tune_gelu_h200.json", "w"), indent=1)
for r in rows: print(r["op"], r["case"], r["num_warps"], f"{100 * r['frac_of_copy']:.1f}%")
PY
grep -v "^\[" $OUT/gelu_tune.log | tail -8
CUDA_VISIBLE_DEVICES=0 timeout 80 python3 -m sgl_diffusion bench --op activation.gelu --out $OUT/gelu_bench_h200.json > $OUT/gelu_bench.log 2>&1
grep -v "^\[" $OUT/gelu_bench.log | tail -8
tar czf "$2/results.tgz" -C $OUT .
