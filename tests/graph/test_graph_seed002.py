"""Seed 002's node-graph parts added by issue 25: the PDF's document information and a metadata
extractor (topic, keywords) on the Document node, page snapshots stored as PNG files referenced from
the Page nodes, summaries as the embedded text of Page/Document nodes, and enrichment answers without
JSON reported with what was received and re-asked naming the error. Real PyMuPDF parse of a PDF made
here (its document information set), hand-written model answers through fake callables; no network."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from grounded.errors import InputError, ModelOutputError
from grounded.graph import NodeGraph, NodeKind, build_graph, enrich, extract_metadata
from grounded.graph.enrich import parse_items
from grounded.graph.snapshots import keep_snapshots
from grounded.metadata import boxes_from_metadata
from grounded.model import ParsingResult
from grounded.parsers import get_parser
from langchain_grounded import graph_to_documents
from llama_index_grounded import graph_to_nodes

INFO = {"title": "Hive maintenance guide", "author": "A. Beekeeper", "subject": "Apiculture",
        "creationDate": "D:20240102030405Z", "modDate": "D:20240506070809Z"}
PAGES = [
    ("Inspecting a hive", "Open the hive on a warm day. Check every frame for eggs, larvae and capped brood. "
     "A healthy queen lays in a compact pattern."),
    ("Harvesting honey", "Remove frames whose cells are capped. Uncap them with a warm knife and spin them in "
     "an extractor. Strain the honey before bottling."),
]


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("seed002") / "hive.pdf"
    with pymupdf.open() as doc:
        for heading, body in PAGES:
            page = doc.new_page()
            page.insert_text((72, 80), heading, fontsize=18)
            page.insert_textbox(pymupdf.Rect(72, 110, 520, 400), body, fontsize=11)
        doc.set_metadata(INFO)
        doc.save(path)
    return path


@pytest.fixture(scope="module")
def tree(pdf: Path) -> ParsingResult:
    return get_parser("pymupdf").parse(pdf)


class Answers:
    """A model callable ``(prompt, *, temperature=None) -> str`` answering from a script (an entry is a
    string or a function of the prompt); records prompts and temperatures."""

    def __init__(self, *script: Any) -> None:
        self.script = list(script)
        self.calls: list[tuple[str, float | None]] = []

    def __call__(self, prompt: str, *, temperature: float | None = None) -> str:
        self.calls.append((prompt, temperature))
        step = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return step(prompt) if callable(step) else str(step)


def items(prompt: str) -> str:
    keys = re.findall(r"^\[(n\d+)\]", prompt, re.MULTILINE)
    return json.dumps({"items": [{"key": k, "summary": f"Summary of {k}.", "questions": [f"What is in {k}?"]} for k in keys]})


METADATA_ANSWER = ('```json\n{"topic": "Beekeeping: inspecting hives and harvesting honey", '
                   '"keywords": ["hive", "queen", "honey", "extractor", "hive"], '
                   '"summary": "A short guide to inspecting a hive and harvesting its honey."}\n```')


# -- the PDF's document information -----------------------------------------------------------------
def test_document_node_holds_the_pdfs_document_information(tree: ParsingResult, pdf: Path) -> None:
    graph = build_graph(tree)
    doc = graph.document
    assert doc.metadata["pdf"] == {"title": "Hive maintenance guide", "author": "A. Beekeeper", "subject": "Apiculture",
                                   "creationdate": "2024-01-02T03:04:05+00:00", "moddate": "2024-05-06T07:08:09+00:00"}
    assert doc.metadata["sha256"] == hashlib.sha256(pdf.read_bytes()).hexdigest()
    lc = next(d for d in graph_to_documents(graph) if d.metadata["node_type"] == "document")
    assert lc.metadata["pdf_author"] == "A. Beekeeper" and lc.metadata["pdf_creationdate"].startswith("2024-01-02")
    li = next(n for n in graph_to_nodes(graph) if n.metadata["node_type"] == "document")
    assert "pdf_title: Hive maintenance guide" in li.get_content(metadata_mode="llm")


# -- the metadata extractor ---------------------------------------------------------------------------
def test_metadata_extractor_sets_topic_keywords_and_summary(tree: ParsingResult) -> None:
    graph = build_graph(tree)
    model = Answers(METADATA_ANSWER, items)
    report = extract_metadata(graph, model, keywords=4)
    doc = graph.document
    assert doc.metadata["topic"] == "Beekeeping: inspecting hives and harvesting honey"
    assert doc.metadata["keywords"] == ["hive", "queen", "honey", "extractor"]  # duplicates dropped, at most 4
    assert doc.summary == report.summary and doc.metadata["summary_by"] == "metadata_extractor"
    prompt, temperature = model.calls[0]
    assert "Open the hive on a warm day" in prompt and "Strain the honey" in prompt and temperature == 0.1
    assert report.calls == 1 and not doc.flags
    # enrichment then leaves the Document summary alone (seed 002: "if not previously extracted")
    run = enrich(graph, model, questions=1)
    assert run.calls == 2 and doc.summary == report.summary  # headers+tables, pages; no document stage
    lc = next(d for d in graph_to_documents(graph) if d.metadata["node_type"] == "document")
    assert json.loads(lc.metadata["keywords"]) == ["hive", "queen", "honey", "extractor"] and lc.metadata["topic"]


def test_metadata_extractor_re_asks_then_flags(tree: ParsingResult) -> None:
    graph = build_graph(tree)
    model = Answers("Sure! The topic is beekeeping.", '{"topic": "Beekeeping", "keywords": "hive, honey"}')
    report = extract_metadata(graph, model)
    (first, t1), (second, t2) = model.calls
    assert "Your previous answer was invalid: no JSON in the answer; received 'Sure! The topic is beekeeping.'" in second
    assert (t1, t2) == (0.1, pytest.approx(0.3))
    assert graph.document.metadata["topic"] == "Beekeeping" and "keywords" not in graph.document.metadata
    assert report.flags == ["metadata extractor: 'keywords' is not a non-empty list of strings"] == graph.document.flags

    prose = Answers("I cannot help with that.")
    report = extract_metadata(build_graph(tree), prose)
    assert report.calls == 2 and "no JSON in the answer; received 'I cannot help with that.'" in report.flags[0]
    with pytest.raises(ModelOutputError, match="no JSON in the answer"):
        extract_metadata(build_graph(tree), prose, on_error="raise")


# -- enrichment answers without JSON ------------------------------------------------------------------
def test_an_answer_without_json_says_what_was_received() -> None:
    echoed = "[n1] HEADER\nInspecting a hive\n\n[n2] HEADER\nHarvesting honey"  # brackets, but no JSON
    with pytest.raises(ModelOutputError) as err:
        parse_items(echoed, "summaries")
    assert str(err.value) == ("summaries: no JSON in the answer; received "
                              "'[n1] HEADER\\nInspecting a hive\\n\\n[n2] HEADER\\nHarvesting honey'")
    with pytest.raises(ModelOutputError, match=r"malformed JSON \(.*\); received '\{\"items\": \[\{\"key\"'"):
        parse_items('{"items": [{"key"', "summaries")
    with pytest.raises(ModelOutputError, match=r"no JSON in the answer; received 'Fragment-based design \[1\]"):
        parse_items("Fragment-based design [1] of inhibitors [2].", "summaries")  # citations are not JSON
    with pytest.raises(ModelOutputError, match="no JSON in the answer; received an empty answer"):
        parse_items("  ", "summaries")
    long = "word " * 100
    with pytest.raises(ModelOutputError, match=r"received 'word word .*'… \(499 characters\)$"):
        parse_items(long, "summaries")


def test_enrichment_re_ask_names_the_error_and_is_warmer(tree: ParsingResult) -> None:
    graph = build_graph(tree)
    model = Answers("[n1] HEADER: this section is about inspecting", items)
    report = enrich(graph, model, questions=1)
    assert not report.flagged and report.calls == 4  # the first batch asked twice
    (first, t1), (second, t2) = model.calls[:2]
    assert second.startswith(first) and "Your previous answer was invalid: no JSON in the answer" in second
    assert "'[n1] HEADER: this section is about inspecting'" in second and 'Expected: JSON only, in the form {"items"' in second
    assert (t1, t2) == (0.1, pytest.approx(0.3)) and model.calls[2][1] == 0.1  # the next batch starts cool again


# -- page snapshots -----------------------------------------------------------------------------------
def test_page_snapshots_are_stored_pngs_referenced_from_page_nodes(tree: ParsingResult, pdf: Path, tmp_path: Path) -> None:
    folder = tmp_path / "snapshots"
    graph = build_graph(tree, snapshots=folder, snapshot_dpi=36)
    pages = graph.of_kind(NodeKind.PAGE)
    assert len(pages) == 2 and sorted(p.name for p in folder.iterdir()) == [
        f"{graph.source[:12]}-p0001-36dpi.png", f"{graph.source[:12]}-p0002-36dpi.png"]
    for page in pages:
        ref = page.metadata["snapshot"]
        data = Path(ref["path"]).read_bytes()
        assert data.startswith(b"\x89PNG") and hashlib.sha256(data).hexdigest() == ref["sha256"]
        assert (ref["dpi"], ref["width"], ref["height"]) == (36, 298, 421)  # A4 at 36 dpi
        assert not any(isinstance(v, bytes) for v in ref.values())
    # the exports carry the reference (hidden from embedder and LLM), not the image
    li = next(n for n in graph_to_nodes(graph) if n.metadata["node_type"] == "page")
    assert li.metadata["snapshot_path"].endswith("-p0001-36dpi.png") and len(li.metadata["snapshot_sha256"]) == 64
    assert "snapshot" not in li.get_content(metadata_mode="embed") and "snapshot" not in li.get_content(metadata_mode="llm")
    # a re-run keeps a file whose hash matches; a changed file is replaced
    first = Path(pages[0].metadata["snapshot"]["path"])
    stamp = first.stat().st_mtime_ns
    Path(pages[1].metadata["snapshot"]["path"]).write_bytes(b"stale")
    keep_snapshots(graph, pdf, folder, dpi=36)
    assert first.stat().st_mtime_ns == stamp
    assert hashlib.sha256(Path(pages[1].metadata["snapshot"]["path"]).read_bytes()).hexdigest() == pages[1].metadata["snapshot"]["sha256"]
    assert not [p for p in folder.iterdir() if not p.name.endswith(".png")]  # no temp file left


def test_snapshots_refuse_another_pdf(tree: ParsingResult, tmp_path: Path) -> None:
    graph = build_graph(tree)
    other = tmp_path / "other.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "Something else.")
        doc.save(other)
    with pytest.raises(InputError, match="is not the PDF this graph was built from"):
        keep_snapshots(graph, other, tmp_path / "s")
    assert not (tmp_path / "s").exists()


# -- summaries are what Page and Document nodes embed ---------------------------------------------------
def _enriched(tree: ParsingResult) -> NodeGraph:
    graph = build_graph(tree)
    enrich(graph, Answers(items), questions=1)
    return graph


def test_page_and_document_nodes_embed_their_summary(tree: ParsingResult) -> None:
    graph = _enriched(tree)
    by_id = {n.node_id: n for n in graph_to_nodes(graph)}
    docs = {d.id: d for d in graph_to_documents(graph)}
    for node in graph:
        li, lc = by_id[node.id], docs[node.id]
        if node.kind in (NodeKind.PAGE, NodeKind.DOCUMENT):
            assert node.summary and li.text == lc.page_content == node.summary != node.text
            assert li.metadata["text_kind"] == "summary"
            embedded = li.get_content(metadata_mode="embed")
            assert embedded.count(node.summary) == 1 and "Open the hive" not in embedded
            assert boxes_from_metadata(lc.metadata, text=lc.page_content)  # the pages the summary describes
        else:
            assert li.text == lc.page_content == node.text and "text_kind" not in li.metadata
    header = next(n for n in graph if n.kind == NodeKind.HEADER)
    assert header.summary in by_id[header.id].get_content(metadata_mode="embed")  # a Header's summary as metadata
