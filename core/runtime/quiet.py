"""Quiet model loading (issue #34): no progress bar and no library chatter while a model loads.

``SentenceTransformer(...)`` (transformers >= 5) draws a "Loading weights 103/103" bar on stderr
for the bundled all-MiniLM-L6-v2 on every load -- every ``grounded ingest --embed minilm``, every
vector/hybrid ``search``, every semantic chunker, with ``-q``/``--no-progress``/``--json`` or from
the API alike. The load takes a fraction of a second, so the bar says nothing a user needs:
:func:`quiet_model_loading` switches off transformers' and Hugging Face Hub's progress bars and
lowers the ``transformers``/``sentence_transformers`` loggers to ERROR around the load, and puts
every setting back afterwards (a user's own bars and log levels are unchanged outside the load).
Errors still raise; ERROR log records still show.

Imports no library itself: it only touches the ones already imported (call it after importing
``sentence_transformers``).
"""

from __future__ import annotations

import logging
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["quiet_model_loading", "QUIET_LOGGERS"]

#: loggers lowered to ERROR while a model loads
QUIET_LOGGERS = ("transformers", "sentence_transformers", "huggingface_hub")

_LOCK = threading.RLock()


def _quiet_bars() -> Callable[[], None]:
    """Switch transformers' and Hugging Face Hub's progress bars off; return the undo."""
    undo: list[Callable[[], None]] = []
    hub = sys.modules.get("huggingface_hub.utils.tqdm")
    states = getattr(hub, "progress_bar_states", None)
    saved_states = dict(states) if isinstance(states, dict) else None
    tlog: Any = sys.modules.get("transformers.utils.logging")
    enabled = getattr(tlog, "is_progress_bar_enabled", None)
    if callable(enabled) and enabled():
        with warnings.catch_warnings():  # HF_HUB_DISABLE_PROGRESS_BARS=0 makes the hub warn here
            warnings.simplefilter("ignore")
            tlog.disable_progress_bar()

        def _enable() -> None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tlog.enable_progress_bar()

        undo.append(_enable)
    elif hub is not None and not hub.are_progress_bars_disabled():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            hub.disable_progress_bars()

    def restore() -> None:
        for fn in reversed(undo):
            fn()
        if saved_states is not None and isinstance(states, dict):
            states.clear()  # exactly the hub's per-group switches of before
            states.update(saved_states)

    return restore


@contextmanager
def quiet_model_loading() -> Iterator[None]:
    """Load a model inside this block: no progress bar, only ERROR records of the model libraries;
    every setting is restored on exit (also when the load raises). Re-entrant and serialised
    across threads (the settings are process-wide)."""
    with _LOCK:
        levels = {name: logging.getLogger(name).level for name in QUIET_LOGGERS}
        tlog: Any = sys.modules.get("transformers.utils.logging")
        verbosity = tlog.get_verbosity() if tlog is not None and hasattr(tlog, "get_verbosity") else None
        restore_bars = _quiet_bars()
        try:
            for name in QUIET_LOGGERS:
                logging.getLogger(name).setLevel(logging.ERROR)
            if verbosity is not None:
                tlog.set_verbosity(logging.ERROR)
            yield
        finally:
            restore_bars()
            if verbosity is not None:
                tlog.set_verbosity(verbosity)
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)
