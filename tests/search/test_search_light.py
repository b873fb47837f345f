"""A ``grounded search`` process loads no model for text mode and no torch for vector/hybrid mode
(issue 32 item 4): the question's vector comes from the ONNX graph exported offline from the local
MiniLM weights, checked equal to sentence-transformers at cosine >= 0.999; quiet runs print
nothing on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.data import REPO
from tests.support.search_index import ANSWER_PAGE, ENV, QUESTION, guideline_index, table_rows

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache

#: runs ``grounded search`` in a fresh interpreter, then prints the heavy modules it imported
PROBE = r'''
import sys
from grounded.cli.main import main
code = main(["search", *sys.argv[1:]])
heavy = sorted(m for m in ("torch", "sentence_transformers", "transformers", "pandas", "onnxruntime") if m in sys.modules)
print("MODULES " + " ".join(heavy))
sys.exit(code)
'''


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "light")


def _probe(out: Path, cache: Path, *args: str) -> tuple[list[dict[str, object]], list[str], str]:
    env = {k: v for k, v in {**ENV, "GROUNDED_CACHE_DIR": str(cache)}.items() if k != "GROUNDED_ONNX_DIR"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(out), QUESTION, "--json", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    return [json.loads(line) for line in lines[:-1]], lines[-1].split()[1:], done.stderr


def test_text_mode_imports_no_model_and_no_pandas(out: Path, tmp_path: Path) -> None:
    from grounded.parsers import get_parser
    from grounded.parsers.cache import ParseCache, parse_once

    # the parse cache as ingest left it (the trees of the indexed PDFs): the focus has its boxes
    cache = tmp_path / "cache"
    for pdf in {str(p) for p in table_rows(out).column("source_path").to_pylist()}:
        parse_once(get_parser("pymupdf"), pdf, cache=ParseCache(cache / "parses"))
    hits, modules, stderr = _probe(out, cache, "-k", "2", "--mode", "text")
    assert hits[0]["pages"] == [ANSWER_PAGE] and modules == [] and stderr == ""
    assert hits[0]["focus"] and hits[0]["focus_boxes"] and hits[0]["focus_method"] == "lexical"
    # a cache without them: text mode parses nothing (no model), the focus has no boxes and says why, once
    hits, modules, stderr = _probe(out, tmp_path / "empty", "-k", "2", "--mode", "text")
    assert modules == [] and hits[0]["focus"] and not hits[0]["focus_boxes"]
    assert stderr.count("has no boxes") == 1 and "text mode parses nothing" in stderr, stderr


@pytest.mark.slow
def test_vector_queries_run_on_the_checked_onnx_graph_without_torch(
    out: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grounded.chunking import minilm_onnx as query_onnx
    from grounded.chunking.strategies.semantic import minilm_embedder
    from grounded.search import search

    cache = tmp_path / "cache"
    monkeypatch.setenv("GROUNDED_CACHE_DIR", str(cache))
    monkeypatch.delenv("GROUNDED_ONNX_DIR", raising=False)  # this test exports into the cache folder itself
    monkeypatch.setattr(query_onnx, "_LOADED", {})  # not the graph another test loaded from another cache
    embed = query_onnx.onnx_query_embedder()  # exported offline from the local weights, then checked
    assert embed is not None
    (graph,) = (cache / "onnx").iterdir()
    assert graph.suffix == ".onnx" and not [p for p in graph.parent.iterdir() if p.name.startswith(".export-")]
    texts = [QUESTION, "Welche Therapie nach neoadjuvanter Chemotherapie?", "乳腺癌", "TEDS of 6 encoder layers",
             "word " * 400]
    cosines = np.sum(embed(texts) * minilm_embedder(device="cpu")(texts), axis=1)
    assert float(cosines.min()) >= query_onnx.MIN_COSINE, cosines
    reference = [h.chunk_id for h in search(out, QUESTION, 5, mode="vector", embedder=minilm_embedder(device="cpu"))]
    assert [h.chunk_id for h in search(out, QUESTION, 5, mode="vector", embedder=embed)] == reference
    for mode in ("vector", "hybrid"):  # a fresh process: the cached graph, no torch, nothing on stderr
        hits, modules, stderr = _probe(out, cache, "-k", "5", "--mode", mode)
        assert "torch" not in modules and "sentence_transformers" not in modules and "pandas" not in modules, modules
        assert stderr == "", stderr
        if mode == "vector":
            assert [h["chunk_id"] for h in hits] == reference
    # a damaged cached graph is exported again (not left to send every later call to torch)
    graph.write_bytes(b"not an onnx graph")
    query_onnx._LOADED.clear()  # (the monkeypatched dict)
    again = query_onnx.onnx_query_embedder()
    assert again is not None and graph.stat().st_size > 1_000_000
    assert float(np.sum(again(texts) * embed(texts), axis=1).min()) > 0.99999
    hits, modules, _ = _probe(out, cache, "-k", "5", "--mode", "vector")
    assert [h["chunk_id"] for h in hits] == reference and "torch" not in modules
    # ... and when it cannot be exported again, sentence-transformers answers, same hits
    graph.write_bytes(b"not an onnx graph")
    query_onnx._LOADED.clear()
    monkeypatch.setattr(query_onnx, "_export_checked", lambda model, path: False)
    assert query_onnx.onnx_query_embedder() is None and not graph.exists()
