"""``grounded search``: hybrid / vector / BM25 retrieval over a real ingest output, typed hits with
boxes, ``--json`` and ``--render``, and the typed refusals."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from grounded.attribution import highlight
from grounded.cli.main import main
from grounded.errors import OutputError
from grounded.search import (
    DEFAULT_MODE,
    RRF_K,
    TEXT_WEIGHT,
    EmptyQueryError,
    IndexNotFoundError,
    MixedConfigurationsError,
    NoEmbeddingsError,
    NotAnIndexError,
    NoTextIndexError,
    SearchIndex,
    SourceChangedError,
    default_mode,
    hit_chunk,
    normalized_score_fusion,
    reciprocal_rank_fusion,
    render_hits,
    search,
)
from tests.support.data import REPO
from tests.support.search_index import (
    ANSWER_PAGE,
    ENV,
    QUESTION,
    derived_index,
    guideline_index,
    highlight_coverage,
    png_pixels,
    sha256,
    span_rects,
    table_rows,
    tree_state,
)

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "search")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "grounded.cli", "search", *args], cwd=REPO, env=ENV,
                          capture_output=True, text=True, timeout=600)


def test_cli_json_puts_the_page_4_answer_first_with_boxes(out: Path) -> None:
    before = tree_state(out)
    done = _cli(str(out), QUESTION, "-k", "3", "--json")
    assert done.returncode == 0, done.stderr
    hits = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(hits) == 3 and [h["rank"] for h in hits] == [1, 2, 3]
    first = hits[0]
    assert first["pages"] == [ANSWER_PAGE] and first["mode"] == DEFAULT_MODE
    assert "Triple-negative" in first["text"] and "Capecitabine" in first["text"]
    assert first["heading_path"][-1] == "4.3 Chemotherapy and targeted therapy"
    pdf = Path(first["source_path"])
    assert pdf.name == "guideline.pdf" and first["source_sha256"] == sha256(pdf)
    assert first["boxes"] and all(b["page"] == ANSWER_PAGE and b["spans"] for b in first["boxes"])
    span = first["boxes"][0]["spans"][0]
    assert 0 <= span["left"] < span["right"] <= 1 and 0 <= span["top"] < span["bottom"] <= 1
    configs = {r["config_fingerprint"] for r in table_rows(out).to_pylist()}
    assert {h["config"] for h in hits} == configs and len(configs) == 1
    assert tree_state(out) == before  # searching never writes into OUT


def test_modes_and_the_fusion(out: Path) -> None:
    index = SearchIndex(out)
    text = search(index, QUESTION, 5, mode="text")
    vector = search(index, QUESTION, 5, mode="vector")
    hybrid = search(index, QUESTION, 5, mode="hybrid", fusion="rrf")
    assert text[0].pages == (ANSWER_PAGE,) and text[0].text_rank == 1 and text[0].vector_rank is None
    assert [h.score for h in text] == sorted((h.score for h in text), reverse=True) and text[0].score > 0
    assert [h.score for h in vector] == sorted((h.score for h in vector), reverse=True)
    assert all(-1.0 <= h.score <= 1.0 and h.vector_rank == h.rank for h in vector)
    # the hybrid score is the documented RRF of the ranks each list gave
    for h in hybrid:
        expected = sum(1.0 / (RRF_K + r) for r in (h.text_rank, h.vector_rank) if r is not None)
        assert h.score == pytest.approx(expected)
    assert hybrid[0].pages == (ANSWER_PAGE,)
    assert [h.chunk_id for h in hybrid] != [h.chunk_id for h in vector]  # the full-text list changed the order
    # the default fusion: the documented weighted sum of each list's min-max normalised scores
    deep_text = search(index, QUESTION, 50, mode="text")
    deep_vector = search(index, QUESTION, 50, mode="vector")
    scored = search(index, QUESTION, 5, mode="hybrid")
    for h in scored:
        expected = 0.0
        for weight, hits in ((TEXT_WEIGHT, deep_text), (1 - TEXT_WEIGHT, deep_vector)):
            low, high = min(x.score for x in hits), max(x.score for x in hits)
            expected += sum(weight * (x.score - low) / (high - low) for x in hits if x.chunk_id == h.chunk_id)
        assert h.score == pytest.approx(expected, abs=1e-6)
    assert scored[0].pages == (ANSWER_PAGE,) and 0 < scored[-1].score <= scored[0].score <= 1
    assert default_mode(index) == DEFAULT_MODE == "hybrid"  # an index with vectors: the default is hybrid
    assert [(h.chunk_id, h.mode) for h in search(index, QUESTION, 5)] == [(h.chunk_id, h.mode) for h in scored]
    with pytest.raises(ValueError, match="fusion"):
        search(index, QUESTION, fusion="max")


def test_normalized_score_fusion_constructed_cases() -> None:
    fused = dict(normalized_score_fusion([[("a", 10.0), ("b", 5.0), ("c", 0.0)], [("c", 0.9), ("d", 0.5)]], (0.8, 0.2)))
    assert fused == pytest.approx({"a": 0.8, "b": 0.4, "c": 0.2, "d": 0.0})
    order = [i for i, _ in normalized_score_fusion([[("a", 10.0), ("b", 9.9)], [("b", 0.9), ("a", 0.1)]], (0.5, 0.5))]
    assert order == ["a", "b"]  # 0.5 each: the tie goes to the best rank (1 for both), then the first list
    assert normalized_score_fusion([[("x", 3.0), ("y", 3.0)], []], (0.8, 0.2)) == [("x", 0.8), ("y", 0.8)]
    assert normalized_score_fusion([[], []], (0.8, 0.2)) == []
    with pytest.raises(ValueError):
        normalized_score_fusion([[("a", 1.0)]], (0.5, 0.5))


def test_reciprocal_rank_fusion_constructed_cases() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "b", "d"]], k=60))
    assert fused["b"] == pytest.approx(2 / 62) and fused["a"] == pytest.approx(1 / 61)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61) and fused["d"] == pytest.approx(1 / 63)
    order = [i for i, _ in reciprocal_rank_fusion([["a", "b", "c"], ["c", "b", "d"]])]
    assert order == ["c", "b", "a", "d"]  # c: 1/61 + 1/63 = 0.032266 > b: 2/62 = 0.032258 > a > d
    # ties are broken by the best rank reached, then by the list order: deterministic
    assert [i for i, _ in reciprocal_rank_fusion([["x", "y"], ["y", "x"]])] == ["x", "y"]
    assert reciprocal_rank_fusion([["a", "a", "b"]]) == [("a", 1 / 61), ("b", 1 / 63)]  # a repeat counts once
    assert reciprocal_rank_fusion([]) == [] and reciprocal_rank_fusion([[], []]) == []
    with pytest.raises(ValueError):
        reciprocal_rank_fusion([["a"]], k=-1)


def test_render_draws_the_hit_on_its_page(out: Path, tmp_path: Path) -> None:
    done = _cli(str(out), QUESTION, "-k", "1", "--json", "--render", str(tmp_path / "png"))
    assert done.returncode == 0, done.stderr
    hit = json.loads(done.stdout)
    (image,) = sorted((tmp_path / "png").iterdir())
    assert image.name == f"01-{hit['chunk_id']}-p{ANSWER_PAGE}.png"
    pixels = png_pixels(image.read_bytes())
    inside, outside = highlight_coverage(pixels, span_rects(hit["boxes"], ANSWER_PAGE, pixels.shape[1], pixels.shape[0]))
    assert inside > 0.6 and outside < 0.01, (inside, outside)


def test_hit_chunk_feeds_the_attribution_functions(out: Path) -> None:
    import pymupdf

    hit = search(out, QUESTION, 1, mode="hybrid")[0]
    chunk = hit_chunk(hit)
    assert chunk.id == hit.chunk_id and chunk.pages == list(hit.pages) and chunk.body == hit.body
    assert [(b.page, b.left, b.top) for b in chunk.geom] == [(b.page, b.left, b.top) for b in hit.boxes]
    assert sum(len(b.spans) for b in chunk.geom) == sum(len(b.spans) for b in hit.boxes) > 0
    with pymupdf.open(stream=highlight(Path(hit.source_path), [chunk]), filetype="pdf") as doc:
        titles = {a.info["title"] for a in doc[ANSWER_PAGE - 1].annots()}
    assert hit.chunk_id in titles


def test_typed_refusals(out: Path, tmp_path: Path) -> None:
    with pytest.raises(IndexNotFoundError, match="no such folder"):
        search(tmp_path / "missing", QUESTION)
    (tmp_path / "pdfs").mkdir()
    with pytest.raises(NotAnIndexError, match="--sink lancedb"):
        search(tmp_path / "pdfs", QUESTION)
    for blank in ("", "  \n"):
        with pytest.raises(EmptyQueryError):
            search(out, blank)
    with pytest.raises(ValueError, match="mode"):
        search(out, QUESTION, mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be"):
        search(out, QUESTION, 0)
    with pytest.raises(OutputError, match="ingest output"):
        render_hits(search(out, QUESTION, 1, mode="text"), out / "images", keep_out_of=out)
    assert not (out / "images").exists()


def test_cli_errors_are_one_line(out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cases = [
        ([str(tmp_path / "missing"), QUESTION], "no such folder"),
        ([str(out), "   "], "the question is empty"),
        ([str(out), QUESTION, "-k", "0"], "-k must be >= 1"),
        ([str(out), QUESTION, "--render", str(out / "x")], "refusing to write images into the ingest output"),
    ]
    for args, message in cases:
        assert main(["search", *args]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err and "Traceback" not in err, err


def test_no_embeddings_and_no_text_index(out: Path, tmp_path: Path) -> None:
    rows = table_rows(out)
    plain = derived_index(tmp_path / "plain", rows.drop_columns(["vector"]))  # = ingest --sink lancedb without --embed
    with pytest.raises(NoEmbeddingsError, match="--embed minilm"):
        search(plain, QUESTION, mode="vector")
    with pytest.raises(NoEmbeddingsError):
        search(plain, QUESTION, mode="hybrid")  # hybrid needs both
    assert search(plain, QUESTION, 1, mode="text")[0].pages == (ANSWER_PAGE,)
    assert DEFAULT_MODE == "hybrid" and default_mode(SearchIndex(plain)) == "text"
    assert search(plain, QUESTION, 1)[0].mode == "text"  # the default falls back: it needs no embeddings
    assert main(["search", str(plain), QUESTION, "-k", "1"]) == 0  # the CLI's default too
    unindexed = derived_index(tmp_path / "unindexed", rows, text_index=False)
    with pytest.raises(NoTextIndexError, match="full-text index"):
        search(unindexed, QUESTION, mode="text")
    assert search(unindexed, QUESTION, 3, mode="vector")
    assert default_mode(SearchIndex(unindexed)) == "vector" and search(unindexed, QUESTION, 3)[0].mode == "vector"


def test_embeddings_as_fixed_or_variable_lists(out: Path, tmp_path: Path) -> None:
    rows = table_rows(out)
    vectors = rows.column("vector")
    fixed = rows.drop_columns([c for c in ("vector", "embedding") if c in rows.column_names]).append_column("embedding", vectors)
    only_embedding = derived_index(tmp_path / "fixed", fixed)  # fixed-size `embedding`, no `vector` column
    expected = [h.chunk_id for h in search(out, QUESTION, 5, mode="vector")]
    assert [h.chunk_id for h in search(only_embedding, QUESTION, 5, mode="vector")] == expected
    variable = derived_index(tmp_path / "variable", rows.drop_columns(["vector"]))  # the Parquet list<float>
    with pytest.raises(NoEmbeddingsError):
        search(variable, QUESTION, mode="vector")


def test_two_configurations_are_never_mixed(out: Path, tmp_path: Path) -> None:
    rows = table_rows(out)
    other = rows.set_column(rows.schema.get_field_index("config_fingerprint"), "config_fingerprint",
                            pa.array(["f" * 64] * rows.num_rows))
    other = other.set_column(other.schema.get_field_index("chunk_id"), "chunk_id",
                             pc.binary_join_element_wise(other.column("chunk_id"), pa.scalar("-other"), ""))
    mixed = derived_index(tmp_path / "mixed", pa.concat_tables([rows, other]))
    for mode in ("hybrid", "vector", "text"):
        with pytest.raises(MixedConfigurationsError, match="2 ingest configurations"):
            search(mixed, QUESTION, mode=mode)
    original = rows.column("config_fingerprint")[0].as_py()
    for config, suffix in ((original[:10], False), ("fff", True)):
        hits = search(mixed, QUESTION, 10, config=config)
        assert len(hits) == 10 and all(h.chunk_id.endswith("-other") is suffix for h in hits)
    with pytest.raises(MixedConfigurationsError, match="matches no"):
        search(mixed, QUESTION, config="0123")


def test_a_changed_pdf_is_not_drawn_on(out: Path, tmp_path: Path) -> None:
    rows = table_rows(out)
    original = next(p for p in rows.column("source_path").to_pylist() if p.endswith("guideline.pdf"))
    copy = tmp_path / "guideline.pdf"
    copy.write_bytes(Path(original).read_bytes())
    moved = rows.set_column(rows.schema.get_field_index("source_path"), "source_path",
                            pc.replace_substring(rows.column("source_path"), original, str(copy)))
    index = derived_index(tmp_path / "moved", moved)
    hits = search(index, QUESTION, 1)
    assert hits[0].source_path == str(copy) and hits[0].pages == (ANSWER_PAGE,)
    assert render_hits(hits, tmp_path / "ok")  # the same bytes: drawn
    copy.write_bytes(copy.read_bytes() + b"\n% a new version\n")
    with pytest.raises(SourceChangedError, match="changed since it was indexed"):
        render_hits(hits, tmp_path / "changed")
    copy.unlink()
    with pytest.raises(SourceChangedError, match="cannot be read"):
        render_hits(hits, tmp_path / "gone")


def test_a_malformed_row_names_the_chunk_and_field(out: Path) -> None:
    from grounded.errors import SchemaError
    from grounded.search import hit_from_row

    row = next(r for r in table_rows(out).to_pylist() if r["boxes"])
    hit = hit_from_row(row, rank=1, score=1.0, mode="text")
    assert hit.boxes[0].spans and hit.body == row["body"] and hit.text == row["text"]
    for field, value, message in (("page", 0, "'page' must be an integer >= 1"), ("left", "x", "'left' must be a number")):
        broken = {**row, "boxes": [{**row["boxes"][0], field: value}]}
        with pytest.raises(SchemaError, match=f"{row['chunk_id']}: boxes\\[0\\]: {message}"):
            hit_from_row(broken, rank=1, score=1.0, mode="text")
    with pytest.raises(SchemaError, match="missing columns"):
        hit_from_row({k: v for k, v in row.items() if k != "boxes"}, rank=1, score=1.0, mode="text")


def test_a_second_ingest_with_another_n_never_mixes_configurations(out: Path, tmp_path: Path) -> None:
    import contextlib
    import shutil

    from grounded.errors import GroundedError
    from grounded.ingest import ingest
    from tests.support.search_index import ensure_text_index

    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    sources = sorted(set(table_rows(copy).column("source_path").to_pylist()))
    with contextlib.suppress(GroundedError):  # refused (one configuration per folder), or written beside the first
        ingest(sources, copy, max_tokens=128, embed="minilm", sink="lancedb", workers=1, progress=False)
    ensure_text_index(copy)
    configs = set(table_rows(copy).column("config_fingerprint").to_pylist())
    for mode in ("text", "vector", "hybrid"):
        if len(configs) == 1:
            assert {h.config for h in search(copy, QUESTION, 10, mode=mode)} == configs  # type: ignore[arg-type]
            continue
        with pytest.raises(MixedConfigurationsError):
            search(copy, QUESTION, 10, mode=mode)  # type: ignore[arg-type]
        for config in configs:
            assert {h.config for h in search(copy, QUESTION, 10, mode=mode, config=config)} == {config}  # type: ignore[arg-type]
