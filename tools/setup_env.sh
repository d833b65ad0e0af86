#!/usr/bin/env bash
# Prepare the ONE development environment of the monorepo: <repo>/.venv
#
#   bash tools/setup_env.sh            # create or update .venv (fast no-op when up to date)
#   PYTHON=python3.12 bash tools/setup_env.sh   # pick the interpreter that creates .venv
#   SETUP_ENV_FORCE=1 bash tools/setup_env.sh   # ignore the stamp, reinstall
#   TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu bash tools/setup_env.sh
#                                      # take torch from that index (the CPU build on a machine
#                                      # without a GPU; what pip resolves on Linux is the CUDA build)
#
# Order matters:
#   1. torch and triton with explicit pins, FIRST. An unpinned torch (asked for by any
#      package's dependencies) would make pip fetch a multi-GB CUDA build; with the pin,
#      pip takes the CPU wheel that lies on local disk where there is one.
#   2. the pinned developer tools (tools/dev-requirements.txt); none of them needs torch.
#   3. every distribution under packages/ in editable mode with --no-deps (their
#      dependencies are torch, triton and each other, all present by then) and
#      --no-build-isolation (hatchling is in .venv; no isolated build env is fetched).
#
# A stamp file (.venv/.setup-stamp) holds a hash of everything above (this script, the
# requirements, every packages/*/pyproject.toml, the interpreter's version); when it
# matches, the script only checks that the environment imports and exits.
set -euo pipefail

TORCH_PIN="torch==2.13.0"
TRITON_PIN="triton==3.9.0"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
VPY="$VENV/bin/python"
STAMP="$VENV/.setup-stamp"
REQS="tools/dev-requirements.txt"
PYTHON="${PYTHON:-python3}"

log() { printf '[setup_env] %s\n' "$*"; }

shopt -s nullglob
PKG_DIRS=()
for pyproject in packages/*/pyproject.toml; do
    PKG_DIRS+=("$(dirname "$pyproject")")
done
shopt -u nullglob

# 0. the virtual environment itself
if [[ -x "$VPY" ]] && "$VPY" -c 'import sys' >/dev/null 2>&1; then
    log "using $VENV ($("$VPY" --version 2>&1))"
else
    if ! command -v "$PYTHON" >/dev/null 2>&1; then
        log "error: no '$PYTHON' on PATH to create $VENV (set PYTHON=...)"
        exit 1
    fi
    if ! "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)'; then
        log "error: $PYTHON is $("$PYTHON" --version 2>&1); sgl-diffusion needs Python >= 3.10"
        exit 1
    fi
    log "creating $VENV with $(command -v "$PYTHON") ($("$PYTHON" --version 2>&1))"
    rm -rf "$VENV"
    "$PYTHON" -m venv "$VENV"
fi

# What the environment is made from; any change re-runs the installs.
stamp_inputs() {
    echo "torch: $TORCH_PIN"
    echo "triton: $TRITON_PIN"
    "$VPY" -c 'import sys; print("python:", sys.version)'
    sha256sum "tools/setup_env.sh" "$REQS"
    for d in "${PKG_DIRS[@]}"; do
        sha256sum "$d/pyproject.toml"
    done
}
WANT="$(stamp_inputs | sha256sum | cut -d' ' -f1)"

if [[ -z "${SETUP_ENV_FORCE:-}" && -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
    if "$VPY" -c 'import torch, triton, nox, pytest' >/dev/null 2>&1; then
        log "up to date (stamp $WANT); nothing to install"
        exit 0
    fi
    log "stamp matches but the environment does not import torch/triton/nox/pytest: reinstalling"
fi
rm -f "$STAMP"

PIP=("$VPY" -m pip --disable-pip-version-check install --progress-bar off)

# 1. torch and triton first, pinned.
if [[ -n "${TORCH_INDEX_URL:-}" ]]; then
    log "installing $TORCH_PIN from $TORCH_INDEX_URL"
    "${PIP[@]}" --index-url "$TORCH_INDEX_URL" "$TORCH_PIN"
fi
log "installing $TORCH_PIN $TRITON_PIN"
"${PIP[@]}" "$TORCH_PIN" "$TRITON_PIN"

# 2. developer tools.
log "installing developer tools from $REQS"
"${PIP[@]}" -r "$REQS"

# 3. the family, editable, no dependencies.
if ((${#PKG_DIRS[@]} == 0)); then
    log "error: no packages/*/pyproject.toml found under $ROOT"
    exit 1
fi
log "installing ${#PKG_DIRS[@]} packages editable (--no-deps --no-build-isolation)"
for d in "${PKG_DIRS[@]}"; do
    log "  -e $d"
    if ! "${PIP[@]}" --quiet --no-deps --no-build-isolation -e "$d"; then
        log "error: $d does not install (editable); see pip's output above"
        exit 1
    fi
done

# Check that what was asked for is what is installed (a later resolve must not have moved torch).
"$VPY" - "$TORCH_PIN" "$TRITON_PIN" <<'EOF'
import sys
from importlib.metadata import version

for pin in sys.argv[1:]:
    name, want = pin.split("==")
    got = version(name)
    if got.split("+")[0] != want:
        sys.exit(f"[setup_env] error: {name} {got} is installed, {want} was pinned")
    print(f"[setup_env] {name} {got}")
EOF

echo "$WANT" >"$STAMP"
log "done: $VENV ready (stamp $WANT)"
