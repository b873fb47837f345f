"""``grounded ingest --device`` (issue 24): the embedder's device reaches every worker, a bad name
or a GPU that is not there is refused before any work, and the device is no part of the
configuration fingerprint (it says where vectors are computed, not which)."""

from __future__ import annotations

import pytest

from grounded.cli.main import main
from grounded.errors import DeviceUnavailableError
from grounded.ingest import ingest
from grounded.ingest.config import config_fingerprint
from grounded.ingest.errors import IngestError
from grounded.ingest.worker import JobConfig
from tests.support.data import LONG_PDFS


def test_a_bad_device_name_is_refused_before_any_work(tmp_path) -> None:
    out = tmp_path / "out"
    with pytest.raises(IngestError, match="device must be"):
        ingest(tmp_path / "missing", out, embed="minilm", device="gpu", progress=False)
    assert not out.exists()  # nothing written, not even the folder


def test_the_cli_option_reaches_ingest(tmp_path, capsys) -> None:
    code = main(["ingest", str(tmp_path), "-o", str(tmp_path / "out"), "--embed", "minilm", "--device", "gpu"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and len(err) == 1 and "device must be" in err[0] and "Traceback" not in err[0]


def test_cuda_without_a_gpu_is_refused_before_any_work(tmp_path) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the refusal is not exercised")
    if not LONG_PDFS:
        pytest.skip("shared PDFs not available")
    with pytest.raises(DeviceUnavailableError):
        ingest(LONG_PDFS[0], tmp_path / "out", embed="minilm", device="cuda", progress=False)
    assert not (tmp_path / "out").exists()


def test_the_device_is_not_part_of_the_fingerprint() -> None:
    assert config_fingerprint(JobConfig(embed="minilm", device="cpu"), "c") == config_fingerprint(
        JobConfig(embed="minilm", device="cuda:1"), "c"
    )
    assert JobConfig().device == "auto"
