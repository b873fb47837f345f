#!/usr/bin/env bash
# The test command: installs grounded with its test extras into ./.venv, then runs the whole suite
# (slow real-model tests included; pass `-m "not slow"` to skip them locally).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup_venv.sh test
# LangChain's PyMuPDF4LLMLoader for the drop-in tests: its package pins pymupdf4llm==1.28 (PyMuPDF 1.x),
# so it comes without its dependencies (its loader runs on the pymupdf4llm 2.0 that grounded installs)
.venv/bin/python -m pip install --quiet --no-deps "langchain-pymupdf4llm>=1.0"
# strace lets tests/project/test_no_network.py prove that no native code (onnxruntime) opens a socket
if ! command -v strace >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq strace >/dev/null || echo "strace unavailable: the native no-network test will skip" >&2
  else
    echo "strace not installed (needs root + apt): the native no-network test will skip" >&2
  fi
fi
# Debian's headless chromium drives tests/view/test_view_browser.py through Playwright (Playwright's own browser
# download does not work offline); in CI (CI=true) the browser test fails instead of skipping without it
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && apt-get install -y -qq chromium >/dev/null || echo "chromium unavailable: the browser test will skip (fail in CI)" >&2
  else
    echo "chromium not installed (needs root + apt): the browser test will skip (fail in CI)" >&2
  fi
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# whole files on two workers, the long ones first (tests/conftest.py RUN_FIRST); per-file wall/CPU seconds at the end
.venv/bin/python -m pytest -n 2 --dist loadfile --no-loadscope-reorder -p tests.support.file_durations "$@"
