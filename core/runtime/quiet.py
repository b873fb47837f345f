"""Quiet runs (issue #34): no progress bar and no library chatter while a model loads
(:func:`quiet_model_loading`), and native libraries' known stderr chatter filtered
(:func:`filtered_native_stderr`).

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

Native code (Tesseract inside MuPDF: "Line cannot be recognized!!", "Empty page!!", ...) writes to
file descriptor 2 directly, out of reach of ``sys.stderr``, ``warnings`` or ``logging``.
:func:`filtered_native_stderr` points fd 2 at a temporary file for the duration of the call, then
writes every line that is not known chatter back to the real stderr (a real error still shows)
and logs the chatter at DEBUG. fd 2 is process-wide: nested and concurrent blocks share one
capture, restored when the last one ends.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import tempfile
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

__all__ = ["quiet_model_loading", "QUIET_LOGGERS", "filtered_native_stderr"]

log = logging.getLogger(__name__)

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


class _Capture:
    """The one redirection of fd 2 shared by every active :func:`filtered_native_stderr` block."""

    lock = threading.Lock()
    depth = 0
    saved: int | None = None
    file: Any = None
    #: every pattern of the blocks active since the capture started (all apply to all its lines)
    noise: set[re.Pattern[bytes]] = set()


def _flush_stderr() -> None:
    with suppress(AttributeError, OSError, ValueError):  # no usable sys.stderr (pythonw, closed)
        sys.stderr.flush()


def _start(noise: Sequence[re.Pattern[bytes]]) -> bool:
    with _Capture.lock:
        if _Capture.depth == 0:
            _flush_stderr()
            try:
                saved = os.dup(2)
            except OSError:  # no fd 2 to redirect (a daemon): run unfiltered
                return False
            capture = tempfile.TemporaryFile()  # noqa: SIM115 - closed by _stop
            os.dup2(capture.fileno(), 2)
            _Capture.saved, _Capture.file = saved, capture
        _Capture.depth += 1
        _Capture.noise.update(noise)
        return True


def _stop() -> None:
    with _Capture.lock:
        _Capture.depth -= 1
        if _Capture.depth:
            return
        patterns = list(_Capture.noise)
        _Capture.noise.clear()
        saved, capture = _Capture.saved, _Capture.file
        _Capture.saved = _Capture.file = None
        _flush_stderr()  # what Python wrote meanwhile is in the capture too, and is kept
        if saved is None or capture is None:  # pragma: no cover - depth > 0 implies both
            return
        os.dup2(saved, 2)
        os.close(saved)
        with capture:
            capture.seek(0)
            data = capture.read()
    kept: list[bytes] = []
    for line in data.splitlines(keepends=True):
        if any(p.search(line) for p in patterns):
            log.debug("native stderr: %s", line.decode("utf-8", "replace").rstrip())
        else:
            kept.append(line)
    if kept:
        os.write(2, b"".join(kept))


@contextmanager
def filtered_native_stderr(noise: Sequence[re.Pattern[bytes]]) -> Iterator[None]:
    """Run the block with file descriptor 2 captured; afterwards the captured lines matching one
    of ``noise`` go to the DEBUG log, all others back to stderr (in order)."""
    active = _start(noise)
    try:
        yield
    finally:
        if active:
            _stop()
