#!/usr/bin/env bash
# Create ./.venv (if missing) and install grounded with the given extras, e.g. `scripts/setup_venv.sh test`.
# torch is pinned to 2.13.0 in the extras: on this kind of machine pip takes the local CPU wheel.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS="${1:-}"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
if [ -n "$EXTRAS" ]; then
  .venv/bin/python -m pip install --quiet -e ".[${EXTRAS}]"
else
  .venv/bin/python -m pip install --quiet -e .
fi
