"""The ``grounded`` command line: one package, one module per command (:mod:`.parse`, :mod:`.chunk`,
:mod:`.ground`, :mod:`.highlight`, :mod:`.ingest`, ...), the entry point and shared option helpers
in :mod:`.main`, the model options in :mod:`.llm_options`. Top layer: nothing below imports it."""

from __future__ import annotations

from .main import main

__all__ = ["main"]
