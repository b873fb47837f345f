"""Chunk ids: deterministic, and unique across sources, chunking configurations and char spans
(`grounded.text.ids` + `Chunker.fingerprint`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pymupdf
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grounded.chunking import Chunker
from grounded.io.tree_payload import text_tree
from grounded.model import ParsingResult
from grounded.parsers import get_parser
from grounded.text.ids import chunk_id, source_key, text_key
from grounded.text.tokenizer import load_tokenizer
from tests.support.data import shared

#: four strategy/size configurations (the issue's grid)
CONFIGS = [("recursive", 256, {}), ("recursive", 128, {}), ("fixed", 64, {"overlap": 16}), ("hierarchical", 96, {})]
TEXT = (
    "Renal function and dosing.\n\nPatients with reduced clearance need lower doses of ACE inhibitors; "
    "creatinine is monitored weekly during titration. " * 12
)


def _make_pdf(path: Path, paragraphs: int = 14) -> Path:
    doc = pymupdf.open()
    for p in range(2):
        page = doc.new_page()
        y = 72
        page.insert_text((72, y), f"Section {p + 1}: Dosing in renal impairment", fontsize=14)
        for i in range(paragraphs // 2):
            y += 40
            page.insert_text((72, y), f"Paragraph {p}.{i}: lower doses are advised when clearance falls below 30.", fontsize=10)
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="module")
def roots(tmp_path_factory) -> list[ParsingResult]:
    parser = get_parser("pymupdf")
    made = _make_pdf(tmp_path_factory.mktemp("pdfs") / "made.pdf")
    return [parser.parse(shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")), parser.parse(made)]


def _ids(chunker: Chunker, root: ParsingResult, **kwargs) -> list[str]:
    return [c.id for c in chunker.iter_chunks(root, **kwargs)]


def test_no_collisions_across_sources_configurations_and_identical_texts(roots):
    all_ids: list[str] = []
    for strategy, n, options in CONFIGS:
        chunker = Chunker(strategy, n, **options)
        for root in roots:
            ids = _ids(chunker, root)
            assert ids and ids == _ids(chunker, root)  # deterministic
            all_ids += ids
        # two documents with identical text (no PDF behind them): the adapter names each source
        for doc_id in ("note-a", "note-b"):
            all_ids += _ids(chunker, text_tree(TEXT), source_key=text_key(TEXT, name=doc_id))
    assert len(all_ids) == len(set(all_ids)), f"{len(all_ids) - len(set(all_ids))} colliding ids"


def test_same_pdf_at_two_sizes_shares_no_id_and_ids_follow_char_spans(roots):
    root = roots[0]
    big = list(Chunker("recursive", 512).iter_chunks(root))
    small = list(Chunker("recursive", 128).iter_chunks(root))
    assert not {c.id for c in big} & {c.id for c in small}
    sha = root.metadata["source"]["sha256"]
    for c in small:
        assert c.id.startswith(sha[:12] + "-")
        assert c.id.endswith(f"-{c.metadata['start_char']}-{c.metadata['end_char']}")
    assert [c.metadata["index"] for c in small] == list(range(len(small)))


def test_same_pdf_through_two_parsers_gets_distinct_ids(roots):
    root = roots[1]
    other = ParsingResult.from_dict(root.to_dict())
    other.metadata = {**root.metadata, "parser": "docling"}
    chunker = Chunker("recursive", 64)
    assert not set(_ids(chunker, root)) & set(_ids(chunker, other))
    assert source_key(root.metadata) == f"{root.metadata['source']['sha256']}:pymupdf"


def test_plain_text_ids_default_to_a_text_hash():
    chunker = Chunker("recursive", 32)
    a, b = _ids(chunker, text_tree(TEXT)), _ids(chunker, text_tree(TEXT + " More."))
    assert a[0].startswith(text_key(TEXT)[:12])
    assert a == _ids(chunker, text_tree(TEXT))
    assert not set(a) & set(b)


def test_fingerprint_covers_every_parameter(tmp_path):
    base = Chunker("recursive", 256)
    variants = [
        Chunker("recursive", 255),
        Chunker("recursive", 256, 8),
        Chunker("recursive", 256, delimiters=["\n\n", ". "]),
        Chunker("fixed", 256),
        Chunker("hierarchical", 256),
        Chunker("hierarchical", 256, heading_budget=20),
        Chunker("recursive", 256, box_mode="line"),
        Chunker("recursive", 256, tokenizer="cl100k_base"),
        Chunker("semantic", 256, percentile=0.7),
        Chunker("semantic", 256, embedder=lambda texts: None),
    ]
    prints = [base.fingerprint] + [v.fingerprint for v in variants]
    assert len(set(prints)) == len(prints)
    assert Chunker("recursive", 256).fingerprint == base.fingerprint
    assert Chunker("recursive", 256, 0.0).fingerprint == base.fingerprint
    # the tokenizer's vocabulary counts, not its name: one tokenizer.json copied elsewhere is the same
    # tokenizer; a changed vocabulary at the same name is not
    tok = load_tokenizer()
    path = tmp_path / "tokenizer.json"
    path.write_text(tok._tok.to_str())  # type: ignore[attr-defined]
    same = Chunker("recursive", 256, tokenizer=str(path)).config()["tokenizer"]["vocab_sha256"]
    assert same == base.config()["tokenizer"]["vocab_sha256"]


def test_fingerprint_is_stable_across_processes():
    code = "from grounded.chunking import Chunker; print(Chunker('hierarchical', 128, 16).fingerprint)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == Chunker("hierarchical", 128, 16).fingerprint


@given(
    st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=2, max_size=30, unique=True),
    st.sampled_from(["a" * 64, "b" * 64 + ":pymupdf"]),
)
def test_chunk_id_is_injective_over_spans(spans, key):
    ids = {chunk_id(key, "f" * 64, s, e) for s, e in spans}
    assert len(ids) == len(spans)
    assert chunk_id(key, "f" * 64, *spans[0]) != chunk_id(key, "e" * 64, *spans[0])
    assert chunk_id(key, "f" * 64, *spans[0]) != chunk_id(key + "x", "f" * 64, *spans[0])



@pytest.mark.parametrize(
    ("strategy", "max_tokens", "overlap", "frozen"),
    [("fixed", 128, 0.2, "637490117d0a-2bd7cd2d49-0-447"), ("recursive", 512, 0.2, "637490117d0a-6911f1c47e-0-1791"),
     ("hierarchical", 128, 0, "637490117d0a-799e7db138-0-447")],
)
def test_chunk_ids_do_not_move_with_the_code(strategy, max_tokens, overlap, frozen):
    """Chunk ids are frozen: these are the ids grounded issued before its modules moved into layers
    (issue 20); moving or renaming a module (a tokenizer or strategy class included) must not change
    them (text.ids.class_identity)."""
    root = text_tree("Renal dosing. " * 200)
    assert Chunker(strategy, max_tokens=max_tokens, overlap=overlap).chunk(root).chunks[0].id == frozen
