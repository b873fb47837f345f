"""Where the models run: one rule for the MiniLM embedder (torch) and the layout model (ONNX Runtime).

``device="auto"`` (the default everywhere) takes the GPU when the runtime sees one and the CPU
otherwise; ``"cpu"`` forces the CPU; ``"cuda"`` / ``"cuda:N"`` demand a GPU and raise
:class:`~grounded.errors.DeviceUnavailableError` naming why there is none (a CPU-only build of
torch, no visible CUDA device, an index past the device count, ONNX Runtime without its CUDA
provider). Nothing here imports torch or onnxruntime at module level.
"""

from __future__ import annotations

import re

from grounded.errors import DeviceUnavailableError

__all__ = ["DEVICES_HELP", "check_device", "torch_device", "onnx_providers"]

DEVICES_HELP = "'auto' (GPU when one is visible, else CPU), 'cpu', 'cuda' or 'cuda:N'"
_DEVICE = re.compile(r"auto|cpu|cuda(?::\d+)?")


def check_device(device: str) -> str:
    """``device`` if it is one of :data:`DEVICES_HELP`, else ValueError."""
    if not isinstance(device, str) or not _DEVICE.fullmatch(device):
        raise ValueError(f"device must be {DEVICES_HELP}, got {device!r}")
    return device


def torch_device(device: str = "auto") -> str:
    """The torch device string to load a model on: ``"auto"`` -> ``"cuda"`` when
    ``torch.cuda.is_available()`` else ``"cpu"``; an explicit CUDA device is checked."""
    check_device(device)
    if device == "cpu":
        return "cpu"
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if torch.version.cuda is None:
        raise DeviceUnavailableError(
            device, f"torch {torch.__version__} is a CPU-only build (install a CUDA build of torch)"
        )
    count = torch.cuda.device_count()
    if count == 0 or not torch.cuda.is_available():
        raise DeviceUnavailableError(device, f"torch {torch.__version__} sees no CUDA device")
    index = int(device.split(":")[1]) if ":" in device else 0
    if index >= count:
        raise DeviceUnavailableError(device, f"torch sees {count} CUDA device(s) (indices 0..{count - 1})")
    return device


def onnx_providers(device: str, available: list[str] | None = None) -> list[str]:
    """ONNX Runtime execution providers for ``device``: ``["CUDAExecutionProvider",
    "CPUExecutionProvider"]`` when the CUDA provider is built in (``onnxruntime-gpu``) and the
    device is ``auto`` or ``cuda``; ``["CPUExecutionProvider"]`` otherwise. ``"cuda"`` without
    the provider raises. ``available``: the runtime's providers (default: asked from it). Whether
    a GPU is really present shows only when a session is created on it (see
    :func:`grounded.parsers.backends.pymupdf.layout_device.use_layout_device`)."""
    check_device(device)
    if device == "cpu":
        return ["CPUExecutionProvider"]
    if available is None:
        import onnxruntime as ort

        available = list(ort.get_available_providers())
    if "CUDAExecutionProvider" in available:
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if device == "auto":
        return ["CPUExecutionProvider"]
    raise DeviceUnavailableError(
        device,
        f"ONNX Runtime has no CUDAExecutionProvider (providers: {', '.join(available)}; "
        "install onnxruntime-gpu in place of onnxruntime)",
    )
