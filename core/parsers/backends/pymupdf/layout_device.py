"""PyMuPDF's layout model on the GPU, when ONNX Runtime's CUDA provider is installed.

``import pymupdf`` (>= 2.0) loads the layout model once per process with
``providers=["CPUExecutionProvider"]`` and stores its ``predict`` as ``pymupdf._get_layout``.
PyMuPDF's own ``DocumentLayoutAnalyzer.get_model(use_gpu=True)`` builds the same model with
``["CUDAExecutionProvider", "CPUExecutionProvider"]`` for the layout network and its image-feature
network (the table-grid networks stay on the CPU: PyMuPDF gives them no provider option), so
:func:`use_layout_device` builds that model and puts its ``predict`` in place of the CPU one. The
choice is per process; worker processes of the parser keep the CPU model.
"""

from __future__ import annotations

from typing import Any

from grounded.errors import DeviceUnavailableError
from grounded.runtime.device import check_device, onnx_providers

__all__ = ["use_layout_device", "layout_device"]

#: the device the layout model of this process runs on, once :func:`use_layout_device` moved it
_state: dict[str, Any] = {"device": "cpu"}


def layout_device() -> str:
    """``"cuda"`` when :func:`use_layout_device` moved this process's layout model to the GPU, else ``"cpu"``."""
    return str(_state["device"])


def use_layout_device(device: str = "auto", available: list[str] | None = None) -> str:
    """Run this process's layout model on ``device`` (``auto``/``cpu``/``cuda``); returns the device
    it runs on. ``"auto"`` moves it to the GPU when ONNX Runtime has the CUDA provider and a
    session can really be created on it, and keeps the CPU otherwise; ``"cuda"`` raises
    :class:`~grounded.errors.DeviceUnavailableError` instead. ``available``: ONNX Runtime's
    providers (default: asked from it). Once on the GPU, later calls keep it there."""
    check_device(device)
    if device == "cpu" or _state["device"] == "cuda":
        return layout_device()
    providers = onnx_providers(device, available)  # raises for "cuda" without the provider
    if providers[0] != "CUDAExecutionProvider":
        return layout_device()
    import pymupdf
    from pymupdf.layout import DocumentLayoutAnalyzer

    model = DocumentLayoutAnalyzer.get_model(use_gpu=True)
    session = getattr(getattr(model, "_model", None), "session", None)
    used = list(session.get_providers()) if session is not None else []
    if not used or used[0] != "CUDAExecutionProvider":
        if device == "auto":
            return layout_device()
        raise DeviceUnavailableError(
            device, f"ONNX Runtime created the layout session on {used or 'no provider'} (no usable GPU)"
        )
    pymupdf._get_layout = model.predict
    _state["device"] = "cuda"
    return layout_device()
