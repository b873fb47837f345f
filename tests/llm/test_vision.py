"""The ``vision`` strategy (seed 001, issue #11 part 2) with fake models replaying hand-written
answers (tests/data/vision/README.md) in each provider's real response types: batching and context
hand-over, a table continued over a batch boundary, grounding with exact boxes checked against
PyMuPDF words, non-verbatim text flagged, both adapters, the CLI and bad model output."""

from __future__ import annotations

import base64
import re
import warnings
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from google.genai import types as genai_types

from grounded.chunking import Chunker
from grounded.errors import ChunkingError, ModelOutputError, RemoteServiceError
from grounded.io.box_codec import boxes_from_metadata
from grounded.llm.vision import VisionWarning, parse_response
from grounded.llm.vision.merge import merge_batches
from grounded.llm.vision.response import ModelChunk
from grounded.model import Chunk, ParsingResult
from grounded.model.boxes import body_pages
from grounded.parsers.cache import ParseCache
from grounded.runtime.cloud import RetryPolicy
from grounded.serialization import save_parsing_result
from grounded.text.stream import document_text
from langchain_grounded import GroundedPDFLoader, GroundedTextSplitter
from llama_index_grounded import GroundedNodeParser
from llama_index_grounded.reader import document_from_tree
from tests.support.data import REPO, shared
from tests.support.model_fakes import (
    FakeChatModel,
    FakeGenAIClient,
    FakeLlamaLLM,
    genai_response,
    rate_limited,
)

DATA = REPO / "tests" / "data" / "vision"
ANSWERS = [(DATA / f"fr6_b4_batch{i}.txt").read_text(encoding="utf-8") for i in (1, 2)]
MAX_TOKENS = 256


# -- the document: pages 2-7 of the shared Federal Register PDF (its cost table runs from page 4 to 5) --
@pytest.fixture(scope="module")
def fr6(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ParsingResult, ParseCache]:
    src = shared("long", "federal-register-2020-17221.pdf")
    folder = tmp_path_factory.mktemp("vision")
    pdf = folder / "fr6.pdf"
    with pymupdf.open(src) as doc, pymupdf.open() as out:
        out.insert_pdf(doc, from_page=1, to_page=6)
        out.save(pdf)
    cache = ParseCache(folder / "cache")
    from grounded.parsers import get_parser

    root = get_parser("pymupdf").parse(pdf)
    return pdf, root, cache


# -- checks -----------------------------------------------------------------------------------------
def _norm_words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.lower())


def check_boxes_against_words(pdf: Path, chunk_boxes: Sequence[Any], body: str) -> None:
    """The body boxes cover the body's words and only them (PyMuPDF ``get_text("words")``)."""
    covered: list[str] = []
    with pymupdf.open(pdf) as doc:
        for box in chunk_boxes:
            if box.is_heading:
                continue
            page = doc[box.page - 1]
            w, h = page.rect.width, page.rect.height
            lines = box.spans or [box]
            for x0, y0, x1, y1, word, *_ in page.get_text("words"):
                cx, cy = (x0 + x1) / 2 / w, (y0 + y1) / 2 / h
                if any(ln.left <= cx <= ln.right and ln.top <= cy <= ln.bottom for ln in lines):
                    covered.extend(_norm_words(word))
    want, got = Counter(_norm_words(body)), Counter(covered)
    common = sum((want & got).values())
    assert common >= 0.95 * sum(want.values()), ("recall", body[:80], (want - got).most_common(5))
    assert common >= 0.9 * sum(got.values()), ("precision", body[:80], (got - want).most_common(5))


def check_chunk(root: ParsingResult, chunk: Chunk, tokenizer: Any, page_count: int) -> None:
    meta = chunk.metadata
    doc_text = document_text(root).text
    assert tokenizer.count(chunk.content) <= MAX_TOKENS and meta["token_count"] <= MAX_TOKENS
    assert chunk.content[meta["body_start"] :] == chunk.body
    assert meta["pages"] == body_pages(chunk.geom)
    for b in chunk.geom:
        assert 1 <= b.page <= page_count and 0 <= b.left <= b.right <= 1 and 0 <= b.top <= b.bottom <= 1
    if meta["grounded"]:
        assert doc_text[meta["start_char"] : meta["end_char"]] == chunk.body
        assert chunk.geom and meta["grounding_status"] in ("exact", "fuzzy", "partial")
    else:
        assert not chunk.geom and meta["pages"] == [] and meta["grounding_reason"]
        assert meta["start_char"] == meta["end_char"]


def run_vision(root: ParsingResult, llm: Any, **options: Any) -> tuple[list[Chunk], Chunker]:
    chunker = Chunker("vision", max_tokens=MAX_TOKENS, llm=llm, **options)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VisionWarning)  # every page of the fixture has a grounded chunk
        chunks = chunker.chunk(root).chunks
    return chunks, chunker


@pytest.fixture(scope="module")
def genai_run(fr6: tuple[Path, ParsingResult, ParseCache]) -> tuple[FakeGenAIClient, list[Chunk], Chunker]:
    _, root, _ = fr6
    client = FakeGenAIClient(ANSWERS)
    chunks, chunker = run_vision(root, client)
    return client, chunks, chunker


# -- batching and context -----------------------------------------------------------------------------
def test_batches_of_four_with_context_hand_over(fr6, genai_run) -> None:
    pdf, root, _ = fr6
    client, chunks, _ = genai_run
    requests = client.models.requests
    assert len(requests) == 2 and all(r["model"] == "gemini-2.5-pro" for r in requests)
    images = [[p for p in r["contents"] if isinstance(p, genai_types.Part)] for r in requests]
    prompts = [r["contents"][-1] for r in requests]
    assert [len(i) for i in images] == [4, 2]  # pages 1-4, then 5-6
    with pymupdf.open(pdf) as doc:
        for batch, first in zip(images, (0, 4), strict=True):
            for k, part in enumerate(batch):
                assert part.inline_data is not None and part.inline_data.mime_type == "image/png"
                pix = pymupdf.Pixmap(part.inline_data.data)
                assert abs(pix.width - doc[first + k].rect.width * 150 / 72) <= 1
    assert "[CONTINUES]True|False|Partial[/CONTINUES]" in prompts[0] and "pages 1-4 of 6" in prompts[0]
    assert "LAST CHUNKS (" not in prompts[0] and "HEADING HIERARCHY (" not in prompts[0]
    # batch 2 gets batch 1's last chunk and the heading hierarchy in force at its end
    last = parse_response(ANSWERS[0], "batch 1")[-1]
    assert "pages 5-6 of 6" in prompts[1]
    hierarchy = prompts[1].split("HEADING HIERARCHY (")[1].split("LAST CHUNKS (")[0]
    assert " > ".join(last.headings) in hierarchy
    assert last.content in prompts[1].split("LAST CHUNKS (")[1]
    assert [c.metadata["vision_batch"] for c in chunks] == sorted(c.metadata["vision_batch"] for c in chunks)


def test_table_continued_over_the_batch_boundary(fr6, genai_run) -> None:
    pdf, root, _ = fr6
    _, chunks, _ = genai_run
    rows = {c.metadata["heading_path"][2]: c for c in chunks if c.metadata["heading_path"][2].startswith("Estimated Costs")}
    assert len(rows) == 5  # three rows on page 4 (batch 1), two on page 5 (batch 2): one chunk each
    header_words = {"action", "labor", "parts", "cost", "product", "operators"}
    for name, page, label in (
        ("FCC OPS installation and verification", 4, "FCC OPS installation"),
        ("AFM revisions", 4, "AFM revisions"),
        ("Stabilizer wiring change", 5, "Stabilizer wiring change"),
        ("AOA sensor system test", 5, "AOA sensor system test"),
    ):
        chunk = rows[f"Estimated Costs: {name}"]
        assert chunk.metadata["grounded"] and chunk.metadata["pages"] == [page]
        assert label in chunk.body
        # the row is the body, the table header is context before it: boxes on the row's own page
        context = [b for b in chunk.geom if b.is_heading]
        assert context and {b.page for b in context} == {page}
        header_span, body_span = chunk.metadata["grounding_spans"]  # the header occurrence before the row, the row
        assert header_span[1] <= body_span[0] == chunk.metadata["start_char"] and body_span[1] == chunk.metadata["end_char"]
        assert header_words <= set(_norm_words(chunk.content[: chunk.metadata["body_start"]]))
    assert all("vision_issues" not in c.metadata for c in chunks)  # every chunk on the pages of its own batch
    first_next = rows["Estimated Costs: Stabilizer wiring change"]
    assert first_next.metadata["vision_continues"] == "True" and first_next.metadata["vision_batch"] == 1
    assert "vision_merged" not in first_next.metadata  # a new row of the same table, not glued onto the last row
    # the continued rows start after the rows of page 4 in the document text
    assert first_next.metadata["start_char"] > rows["Estimated Costs: MDS installation and verification, INOP marker removal"].metadata["start_char"]


def test_every_verbatim_chunk_grounded_with_exact_boxes(fr6, genai_run) -> None:
    pdf, root, _ = fr6
    _, chunks, chunker = genai_run
    for chunk in chunks:
        check_chunk(root, chunk, chunker.tokenizer, 6)
    exact = [c for c in chunks if c.metadata["grounding_status"] == "exact" and c.metadata["body_start"] and not any(b.is_heading for b in c.geom)]
    assert len(exact) >= 9
    for chunk in exact:
        assert all(b.mode == "exact" for b in chunk.geom)
        check_boxes_against_words(pdf, chunk.geom, chunk.body)
    across = [c for c in exact if c.metadata["pages"] == [5, 6]]
    assert len(across) == 1 and across[0].body.startswith("Before further flight")  # one chunk, boxes on two pages


def test_text_the_document_does_not_have_is_flagged(genai_run) -> None:
    _, chunks, _ = genai_run
    flagged = [c for c in chunks if not c.metadata["grounded"]]
    assert len(flagged) == 1
    chunk = flagged[0]
    assert chunk.body.startswith("Summary written by the model")
    assert chunk.metadata["grounding_status"] == "refused" and "found" in chunk.metadata["grounding_reason"]
    assert chunk.geom == [] and chunk.metadata["pages"] == []
    assert chunk.metadata["heading_path"][1:] == ["Costs of Compliance", "Summary of the estimated costs"]


def test_prose_continued_over_a_batch_boundary_is_merged(fr6) -> None:
    _, root, _ = fr6
    head = "FR > The Proposed Amendment > (h) Airplane Flight Manual (AFM) Revisions"
    batch1 = (
        "[CONTINUES]False[/CONTINUES]\n[HEAD]FR > Regulatory Findings > Operational readiness flight[/HEAD]"
        "The FAA has received no definitive data that would enable the agency to provide cost estimates for the "
        "operational readiness flight specified in this proposed AD.\n\n"
        f"[CONTINUES]False[/CONTINUES]\n[HEAD]{head}[/HEAD]Before further flight, revise the existing AFM to include "
        "the changes specified in paragraphs (h)(1) through (10) of this AD. Revising the existing AFM to include the "
        "changes specified in paragraphs (h)(2) through (10) of this AD may be done by"
    )
    batch2 = (
        f"[CONTINUES]True[/CONTINUES]\n[HEAD]{head}[/HEAD]inserting a copy of figures 1 through 9 to paragraphs (h)(2) "
        "through (10) of this AD into the existing AFM.\n\n"
        "[CONTINUES]False[/CONTINUES]\n[HEAD]FR > Regulatory Findings > Operational readiness flight[/HEAD]"
        "The FAA has received no definitive data that would enable the agency to provide cost estimates for the "
        "operational readiness flight specified in this proposed AD.\n\n"  # repeated from batch 1 (page 5)
        "[CONTINUES]False[/CONTINUES]\n[HEAD]FR > The Proposed Amendment > (h)(1)[/HEAD](1) In the Certificate "
        "Limitations and Operating Procedures chapters, remove the information identified as \"Required by AD 2018–23–51.\""
    )
    prompts: list[str] = []

    def model(images: list[bytes], prompt: str) -> str:  # the plain-callable kind
        prompts.append(prompt)
        return [batch1, batch2][len(prompts) - 1]

    with pytest.warns(VisionWarning, match=r"pages \[1, 2, 3, 4\]"):  # pages nothing was returned for are named
        chunks = Chunker("vision", max_tokens=MAX_TOKENS, llm=model, batch_size=5, dpi=36).chunk(root).chunks
    assert len(prompts) == 2 and "pages 1-5 of 6" in prompts[0] and "page 6 of 6" in prompts[1]
    assert len(chunks) == 4
    assert "not among the pages shown [6]" in chunks[2].metadata["vision_issues"]  # a repeat is flagged, not hidden
    assert all("vision_issues" not in c.metadata for c in (chunks[0], chunks[1], chunks[3]))
    merged = chunks[1]
    assert merged.metadata["vision_merged"] == 2 and merged.metadata["pages"] == [5, 6]
    assert merged.metadata["grounding_status"] == "exact"
    assert merged.body.startswith("Before further flight") and merged.body.endswith("into the existing AFM.")


# -- adapters -----------------------------------------------------------------------------------------
def test_llama_index_node_parser(fr6) -> None:
    pdf, root, cache = fr6
    llm = FakeLlamaLLM(replies=list(ANSWERS))
    docs = document_from_tree(root, cache=cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VisionWarning)
        nodes = GroundedNodeParser(strategy="vision", max_tokens=MAX_TOKENS, llm=llm, dpi=36).get_nodes_from_documents(docs)
    assert len(llm.received) == 2
    blocks = llm.received[1][0].blocks
    assert [b.block_type for b in blocks] == ["image", "image", "text"] and "LAST CHUNKS (" in blocks[-1].text
    assert blocks[0].resolve_image().read()[:8] == b"\x89PNG\r\n\x1a\n"  # the page image itself, not a path
    grounded = [n for n in nodes if n.metadata["grounded"]]
    flagged = [n for n in nodes if not n.metadata["grounded"]]
    assert len(flagged) == 1 and flagged[0].metadata["grounding_status"] == "refused"
    assert boxes_from_metadata(flagged[0].metadata) == []
    doc_text = document_text(root).text
    for node in grounded:
        body = node.text[node.metadata["body_start"] :]
        assert doc_text[node.start_char_idx : node.end_char_idx] == body
        boxes = boxes_from_metadata(node.metadata)
        assert boxes
        if node.metadata["grounding_status"] == "exact" and not any(b.is_heading for b in boxes):
            check_boxes_against_words(pdf, boxes, body)
    assert "grounding_status" not in nodes[0].get_content(metadata_mode="embed")  # payload stays out of embeddings
    # headings as metadata: the parser re-chunks at a smaller size to make room; the model is not asked again
    parser = GroundedNodeParser(strategy="vision", max_tokens=MAX_TOKENS, llm=llm, dpi=36, heading_context="metadata")
    with warnings.catch_warnings():
        warnings.simplefilter("error", VisionWarning)
        meta_nodes = parser.get_nodes_from_documents(docs)
    assert len(llm.received) == 2 and len(meta_nodes) >= len(nodes)
    tok = parser._get_chunker().tokenizer
    for node in meta_nodes:
        assert tok.count(node.get_content(metadata_mode="embed")) <= MAX_TOKENS
        if node.metadata["grounded"]:
            assert doc_text[node.start_char_idx : node.end_char_idx] == node.text


def test_langchain_loader(fr6) -> None:
    pdf, root, cache = fr6
    chat = FakeChatModel(replies=list(ANSWERS))
    loader = GroundedPDFLoader(pdf, mode="chunks", strategy="vision", max_tokens=MAX_TOKENS, llm=chat, dpi=36, cache=cache.directory)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VisionWarning)
        docs = loader.load()
    assert len(chat.received) == 2
    content = chat.received[0][0].content
    assert [b["type"] for b in content] == ["image_url"] * 4 + ["text"]
    assert content[0]["image_url"]["url"].startswith("data:image/png;base64,")
    png = base64.b64decode(content[0]["image_url"]["url"].split(",", 1)[1])
    with pymupdf.open(pdf) as doc:
        assert pymupdf.Pixmap(png).width == round(doc[0].rect.width * 36 / 72)
    flagged = [d for d in docs if d.metadata["grounded"] is False]
    assert len(flagged) == 1 and "Summary written by the model" in flagged[0].page_content
    doc_text = document_text(root).text
    exact = 0
    for d in docs:
        if not d.metadata["grounded"]:
            continue
        body = d.page_content[d.metadata["body_start"] :]
        assert doc_text[d.metadata["start_char"] : d.metadata["end_char"]] == body
        boxes = boxes_from_metadata(d.metadata)
        if d.metadata["grounding_status"] == "exact" and not any(b.is_heading for b in boxes):
            check_boxes_against_words(pdf, boxes, body)
            exact += 1
    assert exact >= 9
    # the splitter over the loader's single Document (its parse tree found through the tree reference)
    single = GroundedPDFLoader(pdf, mode="single", cache=cache.directory).load()
    splitter_chat = FakeChatModel(replies=list(ANSWERS))
    splitter = GroundedTextSplitter(MAX_TOKENS, strategy="vision", llm=splitter_chat, dpi=36, cache=cache.directory)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VisionWarning)
        parts = splitter.split_documents(single)
    assert len(splitter_chat.received) == 2
    assert [p.page_content for p in parts] == [d.page_content for d in docs]
    assert [p.metadata["boxes"] for p in parts] == [d.metadata["boxes"] for d in docs]


# -- command line -------------------------------------------------------------------------------------
def replay_model() -> Any:
    """``--vision-llm tests.llm.test_vision:replay_model()`` (the CLI test)."""
    answers = list(ANSWERS)
    return lambda images, prompt: answers.pop(0)


def test_cli(fr6, tmp_path, capsys, monkeypatch) -> None:
    from grounded.cli.main import main

    pdf, root, _ = fr6
    tree = tmp_path / "fr6.json"  # the parsed tree (it names fr6.pdf as its source): no second parse
    save_parsing_result(root, tree)
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    assert main(["chunk", str(tree), "--strategy", "vision"]) == 1
    assert "--vision-model" in capsys.readouterr().err  # no model configured: a one-line reason
    assert main(["chunk", str(tree), "--strategy", "vision", "--vision-model", "gemini-2.5-pro"]) == 1
    assert "GEMINI_API_KEY" in capsys.readouterr().err
    out = tmp_path / "chunks.jsonl"
    monkeypatch.syspath_prepend(str(REPO))
    code = main(["chunk", str(tree), "-s", "vision", "--vision-llm", "tests.llm.test_vision:replay_model()", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    assert "vision" in capsys.readouterr().out and len(out.read_text().splitlines()) >= 15


# -- bad model output ---------------------------------------------------------------------------------
def test_bad_output_raises_typed_errors(fr6) -> None:
    _, root, _ = fr6
    cases = {
        "malformed JSON": '[{"heading": "a > b > c", "content": "x", ',
        "no chunk in the answer": "I could not read these pages, sorry.",
        "empty answer": "   ",
        "cut off or blocked": genai_response(ANSWERS[0][:500], finish="MAX_TOKENS"),
    }
    for expected, reply in cases.items():
        client = FakeGenAIClient([reply, reply])
        with pytest.raises(ModelOutputError, match=expected) as info:
            Chunker("vision", max_tokens=MAX_TOKENS, llm=client, batch_size=6, dpi=36).chunk(root)
        assert "fr6.pdf pages 1-6" in str(info.value)
        requests = client.models.requests
        if expected == "cut off or blocked":  # the output limit: not re-asked
            assert len(requests) == 1
            continue
        # an answer holding no chunk is asked again once, the error named, the temperature nudged
        assert len(requests) == 2 and "Your previous answer was invalid" in requests[1]["contents"][-1]
        assert expected in requests[1]["contents"][-1]
        assert (requests[0]["config"].temperature, requests[1]["config"].temperature) == (0.1, pytest.approx(0.3))


def test_rate_limits_and_timeouts_are_retried_then_fail_typed(fr6) -> None:
    _, root, _ = fr6
    waits: list[float] = []
    policy = RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=0.0)
    answer = "\n\n".join(ANSWERS)
    client = FakeGenAIClient([rate_limited(), TimeoutError("read timed out"), answer])
    chunks = Chunker("vision", max_tokens=MAX_TOKENS, llm=client, batch_size=6, dpi=36, retry=policy, sleep=waits.append).chunk(root).chunks
    assert waits == [1.0, 2.0] and len(client.models.requests) == 3 and chunks
    client = FakeGenAIClient([rate_limited()] * 3)
    with pytest.raises(RemoteServiceError, match=r"HTTP 429.*after 3 attempts"):
        Chunker("vision", max_tokens=MAX_TOKENS, llm=client, batch_size=6, dpi=36, retry=policy, sleep=waits.append).chunk(root)


def test_missing_flags_and_headings_give_flagged_chunks(fr6) -> None:
    _, root, _ = fr6
    answer = (
        "Here are the chunks.\n"
        "[HEAD]FR > Costs of Compliance > Affected airplanes[/HEAD]The FAA estimates that this proposed AD affects 73 "
        "airplanes of U.S. registry.\n"
        "[CONTINUES]Maybe[/CONTINUES]\n[HEAD]Operational readiness flight[/HEAD]The FAA has received no definitive data "
        "that would enable the agency to provide cost estimates for the operational readiness flight specified in this proposed AD.\n"
        "[CONTINUES]False\n[HEAD]FR > Authority > Title 49\nTitle 49 of the United States Code specifies the FAA's authority to issue rules on aviation safety."
    )
    with pytest.warns(VisionWarning):
        chunks = Chunker("vision", max_tokens=MAX_TOKENS, llm=lambda images, prompt: answer, batch_size=6, dpi=36).chunk(root).chunks
    assert len(chunks) == 4
    intro, no_flag, unknown_flag, unclosed = chunks
    assert intro.metadata["grounded"] is False and "outside the chunk format" in intro.metadata["vision_issues"]
    assert no_flag.metadata["vision_continues"] == "Partial" and "missing CONTINUES" in no_flag.metadata["vision_issues"]
    assert no_flag.metadata["grounding_status"] == "exact"
    assert "unknown CONTINUES flag 'Maybe'" in unknown_flag.metadata["vision_issues"]
    # one heading level given: the two outer ones are inherited from the previous chunk
    assert unknown_flag.metadata["heading_path"] == ["FR", "Costs of Compliance", "Operational readiness flight"]
    assert "unclosed [CONTINUES]" in unclosed.metadata["vision_issues"] and "unclosed [HEAD]" in unclosed.metadata["vision_issues"]
    assert unclosed.metadata["grounded"] and unclosed.body.startswith("Title 49 of the United States Code")


def test_no_model_and_wrong_pdf_are_typed_errors(fr6, tmp_path) -> None:
    _, root, _ = fr6
    with pytest.raises(ChunkingError, match="needs a multimodal model"):
        Chunker("vision", max_tokens=MAX_TOKENS)
    with pytest.raises(ChunkingError, match="overlap must be 0"):
        Chunker("vision", MAX_TOKENS, 16, llm=lambda i, p: "")
    with pytest.raises(ChunkingError, match="option .batch_size. must be an int in \\[1, inf\\)"):
        Chunker("vision", MAX_TOKENS, llm=lambda i, p: "", batch_size=0)
    other = tmp_path / "other.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "another document")
        doc.save(other)
    with pytest.raises(ChunkingError, match="not the one the tree was parsed from"):
        Chunker("vision", max_tokens=MAX_TOKENS, llm=lambda i, p: "", pdf=other).chunk(root)


def test_response_parsing_and_merge_rules() -> None:
    fenced = '```json\n[{"heading": "A > B > C", "content": "Row text", "continues": "True"}]\n```'
    (chunk,) = parse_response(fenced, "json answer")
    assert chunk.headings == ("A", "B", "C") and chunk.continues == "True" and not chunk.issues
    header = "| Drug | Dose |\n|---|---|\n"
    b1 = [ModelChunk("Steps:\n1. Wash hands.", ("D", "S", "Steps"), "False"), ModelChunk(header + "| Aspirin | 100 mg |", ("D", "T", "Row"), "False")]
    b2 = [ModelChunk("| Heparin | 5000 IU |", ("D", "T", "Row"), "True"), ModelChunk("2. Dry hands.", ("D", "S", "Steps"), "True")]
    merged = merge_batches([b1, b2])
    assert [c.content for c in merged] == [b1[0].content, b1[1].content, header + "| Heparin | 5000 IU |", "2. Dry hands."]
    assert "table header taken from the previous chunk" in merged[2].issues
    b3 = [ModelChunk("2. Dry hands.", ("D", "S", "Steps"), "True", pages=(5,))]
    merged = merge_batches([b1[:1], b3])
    assert merged[0].content == "Steps:\n1. Wash hands.\n2. Dry hands." and merged[0].parts == 2


def test_long_model_chunks_are_split_within_the_token_bound(fr6) -> None:
    _, root, _ = fr6
    answers = list(ANSWERS)
    small = 48
    with warnings.catch_warnings():
        warnings.simplefilter("error", VisionWarning)
        chunker = Chunker("vision", max_tokens=small, llm=lambda images, prompt: answers.pop(0), dpi=36)
        chunks = chunker.chunk(root).chunks
    doc_text = document_text(root).text
    whole = {c.metadata["heading_path"][2]: c for c in run_vision_cached(root)}
    by_heading: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        assert chunker.tokenizer.count(chunk.content) <= small and chunk.metadata["token_count"] <= small
        assert chunk.content[chunk.metadata["body_start"] :] == chunk.body
        if chunk.metadata["grounded"]:
            assert doc_text[chunk.metadata["start_char"] : chunk.metadata["end_char"]] == chunk.body and chunk.geom
        else:
            assert not chunk.geom
        by_heading.setdefault(chunk.metadata["heading_path"][2], []).append(chunk)
    split = {h: parts for h, parts in by_heading.items() if len(parts) > 1}
    assert len(split) >= 5
    for heading, parts in split.items():
        full = whole[heading]
        if full.metadata["grounded"]:  # the parts tile the body of the unsplit chunk, in order
            assert parts[0].metadata["start_char"] == full.metadata["start_char"]
            assert parts[-1].metadata["end_char"] == full.metadata["end_char"]
            for a, b in zip(parts, parts[1:]):
                assert not doc_text[a.metadata["end_char"] : b.metadata["start_char"]].strip()
        else:  # text the document does not have: split too, every word kept
            assert _norm_words(" ".join(p.body for p in parts)) == _norm_words(full.body)


def run_vision_cached(root: ParsingResult) -> list[Chunk]:
    answers = list(ANSWERS)
    return Chunker("vision", max_tokens=MAX_TOKENS, llm=lambda images, prompt: answers.pop(0), dpi=36).chunk(root).chunks


def test_tree_parsed_from_bytes_needs_the_pdf(fr6) -> None:
    pdf, root, _ = fr6
    from_bytes = ParsingResult.from_dict(root.to_dict())
    sha = root.metadata["source"]["sha256"]
    from_bytes.metadata["source"] = {"path": "<bytes>", "sha256": sha, "name": "<bytes>", "from_bytes": True}
    with pytest.raises(ChunkingError, match="parsed from bytes"):
        Chunker("vision", max_tokens=MAX_TOKENS, llm=lambda i, p: "", dpi=36).chunk(from_bytes)
    answers = list(ANSWERS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", VisionWarning)
        chunks = Chunker(
            "vision", max_tokens=MAX_TOKENS, llm=lambda images, prompt: answers.pop(0), dpi=36, pdf=pdf.read_bytes()
        ).chunk(from_bytes).chunks
    assert len(chunks) == 16 and sum(1 for c in chunks if c.metadata["grounded"]) == 15  # 16 model chunks, 1 summary
