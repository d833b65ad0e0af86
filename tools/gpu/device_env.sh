# Shared set-up of the device-call scripts (tools/gpu/next_session.sh, session4_run*.sh):
#   source tools/gpu/device_env.sh SHA FINAL WORKDIR
# installs the carried wheels (.whl/) into /tmp/site, puts them and packages/*/src on
# PYTHONPATH, and defines
#   snap                     tar WORKDIR into FINAL/results.tgz (call after every section, so a
#                            run killed at its limit keeps what finished)
#   t NAME LIMIT ARGS...     a pytest GPU lane on the last GPU, log WORKDIR/gpu_lane_NAME.log
#   bench GPU OP LIMIT ARGS  `python -m sgl_diffusion bench` on one GPU, JSON and log in WORKDIR
#   vsweep NAME LIMIT CASES [VAR=VALUE ...]
#                            tools/gpu/vae_norm_sweep.py at CASES on GPU 0 with the given environment
#                            (e.g. TRITON_PTXAS_PATH=$TORCH_PTXAS, the ptxas the benches end up
#                            using), JSON and log WORKDIR/vae_norm_sweep_NAME*; prints each case's
#                            default and best, and any failure
# G2 is the last GPU's index (0 on a one-GPU machine).
SHA="$1"
FINAL="$2"
export OUT="$3"
mkdir -p "$OUT" "$FINAL"
if [ -d .whl ] && [ ! -d /tmp/site ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
fi
PKG_PATHS=$(ls -d packages/*/src | tr '\n' ':')
export PYTHONPATH=/tmp/site:${PKG_PATHS%:}
export PYTHONUNBUFFERED=1 SGL_DIFFUSION_GIT_SHA="$SHA" NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
G2=$(( $(nvidia-smi -L | wc -l) - 1 ))
snap() { tar czf "$FINAL/results.tgz" -C "$OUT" .; }
t() {
    local name=$1 lim=$2
    shift 2
    CUDA_VISIBLE_DEVICES=$G2 timeout "$lim" python3 -m pytest "$@" -m gpu -q -rfE --tb=short -p no:cacheprovider \
        > "$OUT/gpu_lane_$name.log" 2>&1
    echo "$name: $(tail -n 1 "$OUT/gpu_lane_$name.log")"
}
bench() {
    local gpu=$1 op=$2 lim=$3
    shift 3
    CUDA_VISIBLE_DEVICES=$gpu timeout "$lim" python3 -m sgl_diffusion bench --op "$op" \
        --out "$OUT/${op#*.}_bench_h200.json" "$@" > "$OUT/${op#*.}_bench.log" 2>&1
    grep -v "^\[" "$OUT/${op#*.}_bench.log" | tail -12
    snap
}
TORCH_PTXAS=$(python3 -c "import os, torch; print(os.path.join(os.path.dirname(torch.__file__), 'bin', 'ptxas'))")
vsweep() {
    local name=$1 lim=$2 cases=$3
    shift 3
    CUDA_VISIBLE_DEVICES=0 env "$@" timeout "$lim" python3 tools/gpu/vae_norm_sweep.py \
        "$OUT/vae_norm_sweep_${name}_h200.json" "$cases" > "$OUT/vae_norm_sweep_${name}.log" 2>&1
    grep -v "^\[" "$OUT/vae_norm_sweep_${name}.log" | grep -E "^[a-z_]+/[a-z0-9-]+: default|FAILED|Traceback" | tail -8
    snap
}
