"""Quiet model loading (issue #34, item 18): loading MiniLM drew a "Loading weights 103/103" bar on
stderr for every caller (``ingest --embed minilm``, vector/hybrid ``search``, the semantic chunker),
``--no-progress``/``-q``/``--json`` or the API alike. :func:`grounded.runtime.quiet.quiet_model_loading`
silences bars and library chatter around the load only and restores every setting after."""

from __future__ import annotations

import importlib
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from grounded.runtime.quiet import QUIET_LOGGERS, quiet_model_loading

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _hub() -> Any:
    # the module (``import huggingface_hub.utils.tqdm as x`` gives the class of that name)
    return importlib.import_module("huggingface_hub.utils.tqdm")


def _settings() -> tuple[object, ...]:
    import transformers.utils.logging as tlog

    hub = _hub()

    return (
        tlog.is_progress_bar_enabled(),
        hub.are_progress_bars_disabled(),
        dict(hub.progress_bar_states),
        tlog.get_verbosity(),
        tuple(logging.getLogger(name).level for name in QUIET_LOGGERS),
    )


def test_no_bar_inside_and_every_setting_restored_after(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("transformers")
    import transformers.utils.logging as tlog

    was_enabled = tlog.is_progress_bar_enabled()  # another test of this process may have changed it
    tlog.enable_progress_bar()  # the default: bars on
    try:
        before = _settings()
        with quiet_model_loading():
            for _ in tlog.tqdm(range(3), desc="Loading weights"):  # the bar transformers draws at a load
                pass
            assert not tlog.is_progress_bar_enabled()
            assert logging.getLogger("transformers").getEffectiveLevel() == logging.ERROR
            logging.getLogger("transformers.modeling_utils").warning("chatter")
        assert capsys.readouterr().err == ""
        assert _settings() == before
    finally:
        if not was_enabled:
            tlog.disable_progress_bar()


def test_restores_a_users_own_settings_also_when_the_load_raises() -> None:
    pytest.importorskip("transformers")
    import transformers.utils.logging as tlog

    hub = _hub()
    tlog.disable_progress_bar()
    hub.enable_progress_bars("some.group")
    logging.getLogger("sentence_transformers").setLevel(logging.DEBUG)
    try:
        before = _settings()
        with pytest.raises(OSError, match="no weights"), quiet_model_loading():
            raise OSError("no weights")
        assert _settings() == before
    finally:
        hub.progress_bar_states.clear()
        tlog.enable_progress_bar()
        logging.getLogger("sentence_transformers").setLevel(logging.NOTSET)


@pytest.mark.slow
def test_loading_minilm_prints_nothing_on_stderr() -> None:
    """The real model load in a fresh process (the bar is drawn once per process)."""
    pytest.importorskip("sentence_transformers")
    code = (
        "from grounded.chunking.strategies.semantic import minilm_embedder\n"
        "import transformers.utils.logging as t\n"
        "print(minilm_embedder(device='cpu')(['adjuvant therapy']).shape, t.is_progress_bar_enabled())\n"
    )
    done = subprocess.run([sys.executable, "-W", "default", "-c", code], env=ENV, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["(1,", "384)", "True"]  # the user's bars are on again after the load
    assert done.stderr == ""


@pytest.mark.slow
def test_vector_search_json_prints_nothing_on_stderr(tmp_path_factory: pytest.TempPathFactory) -> None:
    """``grounded search OUT Q --mode vector --json`` (embeds the query with MiniLM): stdout only."""
    pytest.importorskip("lancedb")
    from tests.support.search_index import QUESTION, guideline_index

    out = guideline_index(tmp_path_factory, "quiet-search")
    for mode in ("vector", "hybrid"):
        done = subprocess.run(
            [sys.executable, "-W", "default", "-m", "grounded.cli", "search", str(Path(out)), QUESTION, "--mode", mode, "--json"],
            env=ENV, capture_output=True, text=True, timeout=600,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip()
        assert done.stderr == "", (mode, done.stderr)
