#!/usr/bin/env bash
# The repository's test command (what .ci/run and the README call): prepare .venv, then run
# the `ci` nox session (lint, import surface, every package's cpu lane, the AOT compile
# lanes, build + wheel checks). Prints the wall time of each step.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

declare -a STEP_NAMES=() STEP_TIMES=()
step() {
    local name="$1"
    shift
    echo "==== [ci.sh] $name: $*"
    local t0=$SECONDS rc=0
    "$@" || rc=$?
    STEP_NAMES+=("$name")
    STEP_TIMES+=("$((SECONDS - t0))")
    echo "==== [ci.sh] $name: $([[ $rc == 0 ]] && echo ok || echo "FAILED (exit $rc)") in $((SECONDS - t0))s"
    if [[ $rc != 0 ]]; then
        summary
        exit "$rc"
    fi
}
summary() {
    echo "==== [ci.sh] timings"
    for i in "${!STEP_NAMES[@]}"; do
        printf '  %6ss  %s\n' "${STEP_TIMES[$i]}" "${STEP_NAMES[$i]}"
    done
}

step setup_env bash tools/setup_env.sh
# --no-color keeps CI logs plain; nox runs every session in .venv (see noxfile.py).
step "nox ci" .venv/bin/nox --no-color -f noxfile.py -s ci
summary
