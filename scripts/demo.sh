#!/usr/bin/env bash
# The main job: install grounded (offline default parser), write the sample guideline PDF, then
# parse + chunk + highlight it into ./out/ (annotated PDF, PNGs of one chunk, chunks.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup_venv.sh
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
.venv/bin/grounded demo -o out "$@"
