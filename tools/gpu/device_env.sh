# Set-up for a command on a GPU machine that has a copy of this repository (run from its root):
#   source tools/gpu/device_env.sh SHA FINAL WORKDIR [DEVICE]
# installs the wheels carried in .whl/ (if any) into /tmp/site, puts them and packages/*/src on
# PYTHONPATH, records SHA as the git SHA of every benchmark record, and defines
#   snap                       tar WORKDIR into FINAL/results.tgz (call after each step, so a command
#                              killed at its time limit keeps what finished)
#   t NAME LIMIT ARGS...       the pytest GPU lane (-m gpu) on ARGS on the last GPU, log WORKDIR/gpu_lane_NAME.log
#   bench GPU OP LIMIT ARGS... `python -m sgl_diffusion bench --op OP` on GPU, record
#                              WORKDIR/<op>_bench_<DEVICE>.json (DEVICE: default h200) and its log
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0, no symmetric-memory multicast).
SHA="$1"
FINAL="$2"
export OUT="$3"
DEVICE="${4:-h200}"
mkdir -p "$OUT" "$FINAL"
if [ -d .whl ] && [ ! -d /tmp/site ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
G2=$(($(nvidia-smi -L | wc -l) - 1))
snap() { tar czf "$FINAL/results.tgz" -C "$OUT" .; }
t() {
    local name=$1 lim=$2
    shift 2
    CUDA_VISIBLE_DEVICES=$G2 timeout "$lim" python3 -m pytest "$@" -m gpu -q -rfE --tb=short -p no:cacheprovider \
        >"$OUT/gpu_lane_$name.log" 2>&1
    echo "$name: $(tail -n 1 "$OUT/gpu_lane_$name.log")"
}
bench() {
    local gpu=$1 op=$2 lim=$3
    shift 3
    CUDA_VISIBLE_DEVICES=$gpu timeout "$lim" python3 -m sgl_diffusion bench --op "$op" \
        --out "$OUT/${op#*.}_bench_$DEVICE.json" "$@" >"$OUT/${op#*.}_bench.log" 2>&1
    grep -v "^\[" "$OUT/${op#*.}_bench.log" | tail -12
    snap
}
