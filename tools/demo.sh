#!/usr/bin/env bash
# The main job on a fresh machine: set up .venv (idempotent), then run the demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup_env.sh
exec .venv/bin/python tools/demo.py
