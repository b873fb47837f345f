"""``ingest(workers=0)``: the in-process engine -- the rows of a worker-process run, input order,
the parses running ahead of the embedding (bounded), torch threads and priority per batch,
failures isolated."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from grounded.cli.main import main
from grounded.ingest import IngestError, ingest, inprocess_engine
from grounded.ingest.worker import JobConfig
from tests.support.pdf_builders import make_pdf


def _rows(out: Path) -> dict[str, dict]:
    return {r["chunk_id"]: r for p in sorted((out / "chunks").glob("part-*.parquet")) for r in pq.read_table(p).to_pylist()}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("inprocess")
    for k, words in enumerate(("clearance", "creatinine", "potassium")):
        make_pdf(root / f"doc{k}.pdf", pages=2 + k, title=f"Guide {k}", words=words)
    (root / "doc1b_truncated.pdf").write_bytes((root / "doc0.pdf").read_bytes()[:300])
    return root


@pytest.mark.slow
def test_in_process_rows_equal_a_worker_process_run(folder: Path, tmp_path: Path) -> None:
    import torch

    before = torch.get_num_threads()
    here = ingest(folder, tmp_path / "here", workers=0, embed="minilm", progress=False)
    assert torch.get_num_threads() == before  # one thread beside a parse, the default when alone, restored
    pool = ingest(folder, tmp_path / "pool", workers=1, embed="minilm", progress=False)
    assert (here.done, here.failed, here.chunks) == (pool.done, pool.failed, pool.chunks) == (3, 1, pool.chunks)
    assert [e[:2] for e in here.errors] == [e[:2] for e in pool.errors]
    a, b = _rows(tmp_path / "here"), _rows(tmp_path / "pool")
    assert a.keys() == b.keys() and len(a) == pool.chunks > 0
    for key, row in a.items():
        other = b[key]
        assert {k: v for k, v in row.items() if k != "embedding"} == {k: v for k, v in other.items() if k != "embedding"}
        assert np.allclose(row["embedding"], other["embedding"], atol=1e-5)  # torch threads differ: float precision


def test_in_process_results_arrive_in_input_order_with_the_parses_running_ahead_of_the_embedding(
    folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real parse, chunk and rows; the stages are timed by wrapping the engine's two halves.
    A finish slower than a parse (an embedding's length) must not hold the next parses back, up
    to MAX_PENDING documents waiting."""
    spans: dict[tuple[str, str], tuple[float, float, int]] = {}
    waiting_at_parse: list[int] = []
    real_parse, real_finish = inprocess_engine.parse_and_chunk, inprocess_engine.finish_document
    state = {"submitted": 0, "finished": 0}

    def timed(stage: str, fn, key_of):  # noqa: ANN001, ANN202
        def wrapper(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
            started = time.perf_counter()
            if stage == "parse":
                waiting_at_parse.append(state["submitted"] - state["finished"])
            else:
                time.sleep(2.5)  # far slower than a parse of these small PDFs, even on a loaded machine
            out = fn(*args, **kwargs)
            spans[(stage, key_of(args))] = (started, time.perf_counter(), threading.get_ident())
            if stage == "parse" and isinstance(out, inprocess_engine.Chunked):
                state["submitted"] += 1
            elif stage == "finish":
                state["finished"] += 1
            return out
        return wrapper

    monkeypatch.setattr(inprocess_engine, "parse_and_chunk", timed("parse", real_parse, lambda a: Path(a[0]).name))
    monkeypatch.setattr(inprocess_engine, "finish_document", timed("finish", real_finish, lambda a: Path(a[0].path).name))
    names = ["doc0.pdf", "doc1.pdf", "doc1b_truncated.pdf", "doc2.pdf", "doc3.pdf"]
    (tmp_path / "doc3.pdf").write_bytes((folder / "doc2.pdf").read_bytes())
    todo = [(str((tmp_path if n == "doc3.pdf" else folder) / n), f"{k:064d}") for k, n in enumerate(names)]
    results = list(inprocess_engine.run_inprocess(todo, JobConfig()))
    assert [Path(r.path).name for r in results] == names  # input order, the failure in its place
    assert [r.status for r in results] == ["done", "done", "error", "done", "done"]
    assert results[2].error_type and "doc1b_truncated.pdf" in results[2].message
    main_thread = threading.get_ident()
    assert {spans[("parse", n)][2] for n in names} == {main_thread}
    assert {spans[("finish", n)][2] for n in ("doc0.pdf", "doc1.pdf", "doc2.pdf")} != {main_thread}
    # doc2 (the 4th input) parses while doc0's 2.5 s finish still runs, doc1 waiting behind it:
    # the parses run ahead of the embedding ...
    assert spans[("parse", "doc2.pdf")][0] < spans[("finish", "doc0.pdf")][1]
    # ... but never with more than MAX_PENDING chunked documents waiting (a failure holds no place)
    assert max(waiting_at_parse) == inprocess_engine.MAX_PENDING
    assert spans[("parse", "doc3.pdf")][0] >= spans[("finish", "doc0.pdf")][1]  # it waited for doc0
    assert ("finish", "doc1b_truncated.pdf") not in spans  # a failed parse is reported as it is


def test_the_embedding_takes_one_torch_thread_beside_a_parse_its_default_alone_and_a_lower_priority() -> None:
    """Per batch: torch's threads follow whether a parse runs; on Linux the embedding thread's
    scheduling priority is lowered by EMBED_NICE (never the caller's)."""
    import os
    import sys
    from concurrent.futures import ThreadPoolExecutor

    import torch

    default = torch.get_num_threads()
    parsing = threading.Event()
    threads = inprocess_engine._TorchThreads(parsing)
    seen: list[tuple[int, int]] = []

    def embedder(texts: list[str]) -> list[list[float]]:
        seen.append((torch.get_num_threads(), os.getpriority(os.PRIO_PROCESS, threading.get_native_id())))
        if len(seen) == 2:
            parsing.clear()  # the parse beside it ends between two batches
        return [[float(len(t))] for t in texts]

    here = os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) if sys.platform == "linux" else 0
    parsing.set()
    with ThreadPoolExecutor(1) as pool:
        vectors = pool.submit(lambda: list(threads.embed_map(embedder)([["a"], ["bb"], ["ccc"]]))).result()
        pool.submit(threads.restore).result()
    assert vectors == [[[1.0]], [[2.0]], [[3.0]]]
    assert [n for n, _ in seen] == [1, 1, default]
    assert torch.get_num_threads() == default
    if sys.platform == "linux":
        assert {p for _, p in seen} == {min(19, here + inprocess_engine.EMBED_NICE)}
        assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == here


def test_in_process_setup_failure_is_one_setup_error(folder: Path) -> None:
    results = list(inprocess_engine.run_inprocess([(str(folder / "doc0.pdf"), "0" * 64)], JobConfig(strategy="llm")))
    assert len(results) == 1 and results[0].status == "setup-error" and results[0].error_type


def test_workers_zero_is_refused_with_ray_and_negative_counts(folder: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(IngestError, match="workers must be >= 1 with engine 'ray', got 0"):
        ingest(folder, tmp_path / "ray", workers=0, engine="ray", progress=False)
    with pytest.raises(IngestError, match="workers must be >= 0"):
        ingest(folder, tmp_path / "neg", workers=-1, progress=False)
    assert main(["ingest", str(folder), "-o", str(tmp_path / "cli"), "--workers", "0", "--engine", "ray"]) == 1
    assert "--workers must be >= 1 with --engine ray, got 0" in capsys.readouterr().err
    assert not (tmp_path / "ray").exists() and not (tmp_path / "cli").exists()


def test_cli_ingest_in_process(folder: Path, tmp_path: Path) -> None:
    assert main(["ingest", str(folder / "doc0.pdf"), str(folder / "doc2.pdf"), "-o", str(tmp_path / "out"),
                 "--workers", "0", "-q"]) == 0
    rows = _rows(tmp_path / "out")
    assert {Path(r["source_path"]).name for r in rows.values()} == {"doc0.pdf", "doc2.pdf"}
