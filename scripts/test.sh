#!/usr/bin/env bash
# The test command: installs grounded with its test extras into ./.venv, then runs the whole suite
# (slow real-model tests included; pass `-m "not slow"` to skip them locally).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup_venv.sh test
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
.venv/bin/python -m pytest -n 2 --dist loadfile "$@"
