"""Invariant checks shared by the chunking tests (generated trees and real PDFs)."""

from __future__ import annotations

from collections import Counter

from grounded.chunking import document_text
from grounded.model import ChunkingResult, ParsingResult
from grounded.model.boxes import body_pages
from grounded.text.stream import TokenStream


def check_invariants(
    root: ParsingResult,
    result: ChunkingResult,
    stream: TokenStream,
    max_tokens: int,
    *,
    overlap: bool,
    page_count: int,
) -> None:
    """Assert every documented chunk invariant for one chunking of one tree."""
    doc = document_text(root)
    tokenizer = stream.tokenizer
    assert tokenizer is not None
    real_counts = tokenizer.count_batch([c.content for c in result.chunks])
    for chunk, real in zip(result.chunks, real_counts):
        meta = chunk.metadata
        # never longer than N by the chosen tokenizer (recounted from scratch)
        assert real <= max_tokens, (chunk.id, real, max_tokens)
        assert meta["token_count"] <= max_tokens
        # offsets reproduce the body
        assert doc.text[meta["start_char"] : meta["end_char"]] == chunk.body
        assert chunk.content[meta["body_start"] :] == chunk.body
        # element spans are exact slices of the element contents and lie inside the body
        by_id = {n.id: n for n in doc.nodes}
        for element_id, lo, hi in meta["element_spans"]:
            node = by_id[element_id]
            piece = node.content[lo:hi]
            assert piece and piece in chunk.body
            assert doc.element_offsets[element_id] + lo >= meta["start_char"]
            assert doc.element_offsets[element_id] + hi <= meta["end_char"]
        # boxes are valid, on existing pages, and cover every page the body's text lies on
        for box in chunk.geom:
            assert 1 <= box.page <= page_count
            assert 0.0 <= box.left <= box.right <= 1.0 and 0.0 <= box.top <= box.bottom <= 1.0
            assert box.mode in ("exact", "line", "element")
            for span in box.spans:
                assert span.page == box.page
                assert box.left - 1e-9 <= span.left <= span.right <= box.right + 1e-9
        assert meta["pages"] == body_pages(chunk.geom)
        text_pages = set()
        for element_id, lo, hi in meta["element_spans"]:
            for line in (s for b in by_id[element_id].geom for s in b.spans):
                if line.char_start is not None and line.char_start < hi and line.char_end > lo:
                    text_pages.add(line.page)
        assert text_pages <= set(meta["pages"]), (chunk.id, text_pages, meta["pages"])

    # token coverage: every element token lands in a body; without overlap, in exactly one
    covered: Counter[int] = Counter()
    for chunk in result.chunks:
        s, e = chunk.metadata["start_char"], chunk.metadata["end_char"]
        lo = int(stream.starts.searchsorted(s, side="left"))
        hi = int(stream.ends.searchsorted(e, side="right"))
        covered.update(range(lo, hi))
    heading_ids = {h for c in result.chunks for h in c.metadata.get("heading_ids", ())}
    for k in range(len(stream)):
        owner = int(stream.node[k])
        if owner < 0:
            continue  # delimiter tokens (" | ") are structure, not content
        node_id = doc.nodes[owner].id
        if covered[k] == 0:
            assert node_id in heading_ids, f"token {k} of {node_id} lost"
        elif not overlap:
            assert covered[k] == 1, f"token {k} of {node_id} duplicated"
