"""Device selection (issue 24) on a machine without a GPU: ``auto`` falls back to the CPU, an
explicit ``cuda`` is refused with a typed error naming the cause, bad names are refused."""

from __future__ import annotations

import pytest

from grounded.errors import DeviceUnavailableError, GroundedError
from grounded.runtime.device import check_device, onnx_providers, torch_device

torch = pytest.importorskip("torch")
NO_GPU = not torch.cuda.is_available()
needs_no_gpu = pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU: the CPU fallback is not exercised")


@pytest.mark.parametrize("bad", ["gpu", "CUDA", "cuda:", "cuda:x", "", "mps"])
def test_unknown_device_names_are_refused(bad: str) -> None:
    with pytest.raises(ValueError, match="device must be"):
        check_device(bad)


@needs_no_gpu
def test_torch_auto_is_cpu_and_cuda_names_why_not() -> None:
    assert torch_device("auto") == "cpu"
    assert torch_device("cpu") == "cpu"
    for device in ("cuda", "cuda:1"):
        with pytest.raises(DeviceUnavailableError) as info:
            torch_device(device)
        assert isinstance(info.value, GroundedError)
        assert info.value.device == device
        cause = "CPU-only build" if torch.version.cuda is None else "sees no CUDA device"
        assert cause in str(info.value) and torch.__version__ in str(info.value)


def test_onnx_providers_follow_the_runtime() -> None:
    cpu_only = ["AzureExecutionProvider", "CPUExecutionProvider"]
    with_cuda = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    assert onnx_providers("auto", cpu_only) == ["CPUExecutionProvider"]
    assert onnx_providers("cpu", with_cuda) == ["CPUExecutionProvider"]
    assert onnx_providers("auto", with_cuda) == with_cuda
    assert onnx_providers("cuda", with_cuda) == with_cuda
    with pytest.raises(DeviceUnavailableError, match="no CUDAExecutionProvider.*onnxruntime-gpu"):
        onnx_providers("cuda", cpu_only)


def test_layout_model_stays_on_cpu_without_the_cuda_provider() -> None:
    import onnxruntime as ort

    from grounded.parsers import get_parser
    from grounded.parsers.backends.pymupdf.layout_device import layout_device, use_layout_device

    if "CUDAExecutionProvider" in ort.get_available_providers():
        pytest.skip("onnxruntime-gpu installed: the CPU fallback is not exercised")
    assert use_layout_device("auto") == "cpu" == layout_device()
    parser = get_parser("pymupdf")
    assert parser.device == "cpu" and "cuda" not in parser.version()
    with pytest.raises(DeviceUnavailableError, match="onnxruntime-gpu"):
        get_parser("pymupdf", device="cuda")
    with pytest.raises(ValueError, match="device must be"):
        get_parser("pymupdf", device="gpu")


@needs_no_gpu
def test_minilm_embedders_auto_cpu_and_refuse_cuda() -> None:
    pytest.importorskip("sentence_transformers")
    from grounded.chunking.strategies.semantic import minilm_embedder

    with pytest.raises(DeviceUnavailableError):
        minilm_embedder(device="cuda")
    vectors = minilm_embedder(device="auto")(["blood pressure", "hypertension"])
    assert vectors.shape == (2, 384)
    assert abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-5


def test_adapter_embeddings_take_a_device() -> None:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    from langchain_grounded import MiniLMEmbeddings
    from llama_index_grounded import MiniLMEmbedding

    assert MiniLMEmbedding().device == "auto" and MiniLMEmbeddings().device == "auto"
    assert MiniLMEmbedding(device="cpu").device == "cpu"
    with pytest.raises(ValueError):
        MiniLMEmbedding(device="gpu")
    with pytest.raises(ValueError, match="device must be"):
        MiniLMEmbeddings(device="gpu")
    if NO_GPU:
        with pytest.raises(DeviceUnavailableError):
            MiniLMEmbeddings(device="cuda").embed_query("x")
