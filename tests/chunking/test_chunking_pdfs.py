"""Chunking the real shared PDFs parsed by the default parser: invariants for every strategy and N,
and exact-mode highlights measured against a ground truth computed from the PDF alone."""

from __future__ import annotations

import statistics
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest

from grounded.chunking import Chunker
from grounded.chunking.strategies.semantic import minilm_embedder
from grounded.model import ParsingResult
from grounded.text.tokenizer import load_tokenizer
from tests.support.chunk_checks import check_invariants
from tests.support.data import LONG_PDFS
from tests.support.ground_truth import PDFChars, best_iou
from tests.support.shared_parses import SharedParses

TOKENIZER = load_tokenizer()
SIZES = (128, 256, 512, 1024)


@pytest.fixture(scope="module")
def parsed(shared_parses: SharedParses) -> Iterator[dict[str, ParsingResult]]:
    trees = shared_parses.trees(LONG_PDFS, "../shared/data/long")
    yield trees
    shared_parses.assert_unchanged(trees)


class CachedEmbedder:
    """The real MiniLM embedder, memoized per sentence so the N grid embeds each sentence once."""

    def __init__(self) -> None:
        self._embed = minilm_embedder()
        self._cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            for t, v in zip(missing, self._embed(missing)):
                self._cache[t] = v
        return np.stack([self._cache[t] for t in texts])


@pytest.fixture(scope="module")
def embedder() -> CachedEmbedder:
    return CachedEmbedder()


@pytest.mark.parametrize("strategy", ["fixed", "recursive", "hierarchical"])
@pytest.mark.parametrize("max_tokens", SIZES)
def test_invariants_on_shared_pdfs(parsed: dict[str, ParsingResult], strategy: str, max_tokens: int) -> None:
    for name, root in parsed.items():
        for overlap in (0, int(0.2 * max_tokens)):
            chunker = Chunker(strategy, max_tokens, overlap, tokenizer=TOKENIZER)
            result = chunker.chunk(root)
            assert result.chunks, name
            pages = root.metadata["page_count"]
            check_invariants(root, result, chunker.stream(root), max_tokens, overlap=overlap > 0, page_count=pages)


@pytest.mark.slow
@pytest.mark.parametrize("max_tokens", SIZES)
def test_semantic_invariants_on_shared_pdfs(parsed: dict[str, ParsingResult], embedder: CachedEmbedder, max_tokens: int) -> None:
    for name, root in parsed.items():
        for percentile in (0.7, 0.9):
            chunker = Chunker("semantic", max_tokens, tokenizer=TOKENIZER, embedder=embedder, percentile=percentile)
            result = chunker.chunk(root)
            assert result.chunks, name
            pages = root.metadata["page_count"]
            check_invariants(root, result, chunker.stream(root), max_tokens, overlap=False, page_count=pages)


def test_chunks_cross_page_breaks_with_boxes_on_both_pages(parsed: dict[str, ParsingResult]) -> None:
    crossing = 0
    for root in parsed.values():
        for chunk in Chunker("fixed", 512, tokenizer=TOKENIZER).chunk(root).chunks:
            pages = chunk.metadata["pages"]
            if len(pages) > 1:
                crossing += 1
                body_pages = {b.page for b in chunk.geom if not b.is_heading}
                assert len(body_pages) > 1
    assert crossing >= 10


def _mean_iou(root: ParsingResult, pdf: Path, box_mode: str, strategy: str, max_tokens: int) -> list[float]:
    chars = PDFChars.load(pdf)
    ious = []
    for chunk in Chunker(strategy, max_tokens, tokenizer=TOKENIZER, box_mode=box_mode).chunk(root).chunks:
        truths = chars.regions(chunk.body)
        if not truths:
            continue  # text not found in the PDF's own character stream (e.g. table cells in other order)
        ious.append(best_iou(truths, chunk.geom))
    return ious


@pytest.mark.parametrize("strategy,max_tokens", [("fixed", 128), ("recursive", 256)])
def test_exact_mode_matches_ground_truth_regions(parsed: dict[str, ParsingResult], strategy: str, max_tokens: int) -> None:
    exact, line = [], []
    for pdf in LONG_PDFS:
        root = parsed[pdf.name]
        exact += _mean_iou(root, pdf, "exact", strategy, max_tokens)
        line += _mean_iou(root, pdf, "line", strategy, max_tokens)
    print(f"\n{strategy} N={max_tokens}: mean area IoU exact={statistics.mean(exact):.3f} "
          f"line={statistics.mean(line):.3f} over {len(exact)} chunks")
    assert len(exact) > 50
    assert statistics.mean(exact) >= 0.9
    assert statistics.mean(exact) > statistics.mean(line)
