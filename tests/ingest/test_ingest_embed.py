"""``grounded ingest --embed minilm``: unit vectors in the rows, bit-identical when a document is
split over the workers, and the LanceDB sink searchable with the exact boxes. A file of its own
(from test_ingest.py), so the two xdist workers of ``scripts/test.sh`` share the ingest tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from grounded.cli.main import main
from grounded.ingest import ingest
from tests.support.ingest_corpus import make_pdf, parts


@pytest.mark.slow
def test_minilm_embeddings_and_split_document_embeddings_are_identical(tmp_path: Path) -> None:
    """One MiniLM run checked twice (it was two tests, each paying a worker's model load): the
    vectors are 384-d unit vectors and do not change the chunk ids of a run without them; a
    document split over two workers gets the same rows, embeddings bit for bit."""
    pdf = make_pdf(tmp_path / "in" / "four.pdf", 4, 6)
    # one bound for all three runs (with --embed minilm the default bound is the model's window)
    one = ingest(pdf, tmp_path / "one", embed="minilm", workers=1, max_tokens=200, progress=False)
    assert one.ok and one.done == 1 and one.stage_seconds.get("embed", 0) > 0
    (rows,) = parts(tmp_path / "one").values()
    vectors = np.array([r["embedding"] for r in rows], dtype=np.float32)
    assert vectors.shape == (len(rows), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    plain = ingest(pdf, tmp_path / "plain", workers=1, max_tokens=200, progress=False)
    (plain_rows,) = parts(tmp_path / "plain").values()
    assert plain.ok and [r["chunk_id"] for r in plain_rows] == [r["chunk_id"] for r in rows]
    two = ingest(pdf, tmp_path / "two", embed="minilm", workers=2, max_tokens=200, progress=False)
    assert two.ok and one.chunks == two.chunks > 0
    assert parts(tmp_path / "two") == parts(tmp_path / "one")  # embeddings bit for bit: the same slices, one thread each


# -- the LanceDB sink ---------------------------------------------------------------------------------
@pytest.mark.slow
def test_lancedb_sink_is_searchable_with_boxes(tmp_path: Path) -> None:
    """``--sink lancedb`` from the CLI; ``--workers 0`` (the in-process engine, the rows of a worker
    run: tests/ingest/test_ingest_inprocess.py) embeds with the MiniLM this test's query uses."""
    import lancedb

    from grounded.chunking.strategies.semantic import minilm_embedder

    folder = tmp_path / "in"
    make_pdf(folder / "one.pdf", 2, 7)
    make_pdf(folder / "two.pdf", 1, 8)
    out = tmp_path / "out"
    assert main(["ingest", str(folder), "-o", str(out), "--workers", "0", "--embed", "minilm", "--sink", "lancedb", "-q"]) == 0
    expected = {r["chunk_id"]: r for rows in parts(out).values() for r in rows}
    table = lancedb.connect(str(out / "lancedb")).open_table("chunks")
    assert table.count_rows() == len(expected) > 1
    target = next(r for r in expected.values() if r["source_path"].endswith("two.pdf"))
    query = minilm_embedder()([target["text"]])[0]
    (hit,) = table.search(query).limit(1).to_list()
    assert hit["chunk_id"] == target["chunk_id"] and hit["_distance"] < 1e-4
    assert hit["boxes"] == target["boxes"] and hit["boxes"][0]["spans"]  # nested exact boxes survive
    assert hit["pages"] == target["pages"] and hit["source_sha256"] == target["source_sha256"]
    # a re-run adds no duplicate rows (the table is rebuilt from the done parts)
    assert main(["ingest", str(folder), "-o", str(out), "--workers", "0", "--embed", "minilm", "--sink", "lancedb", "-q"]) == 0
    assert lancedb.connect(str(out / "lancedb")).open_table("chunks").count_rows() == len(expected)
