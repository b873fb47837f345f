"""What ``--embed minilm`` embeds of a chunk fits the model's window: the heading path is trimmed to
the room the body leaves (the model silently drops tokens beyond its window, so a long path used to
push the chunk's last sentence out of its vector), and a chunk longer than the window is counted
in the ingest report, never embedded cut without a word."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grounded.chunking.nlp import minilm_window
from grounded.ingest import ingest
from grounded.ingest.rows import embed_text, search_text
from grounded.text.tokenizer import minilm_tokenizer
from tests.support.ingest_corpus import WORDS, make_pdf

COUNT = minilm_tokenizer().count


def _words(n: int, start: int = 0) -> str:
    return " ".join(WORDS[(start + i) % len(WORDS)] for i in range(n))


def _text_of(tokens: int) -> str:
    """A body of exactly ``tokens`` MiniLM tokens."""
    text = _words(tokens)
    while COUNT(text) > tokens:
        text = text.rsplit(" ", 1)[0]
    pad = 0
    while COUNT(text) < tokens:
        text += " " + ["a", "of", "to", "in"][pad % 4]
        pad += 1
    assert COUNT(text) == tokens
    return text


def test_minilm_reads_254_tokens_of_a_text() -> None:
    assert minilm_window() == 254  # max_seq_length 256 in the bundled model's config, minus [CLS] and [SEP]


def test_a_chunk_that_fits_is_embedded_with_its_whole_heading_path() -> None:
    row = {"text": "Body text.", "body_start": 0, "section": "2. Staging > 2.1 Imaging"}
    assert embed_text(row, COUNT, 254) == (search_text(row), 0)


def test_the_heading_path_loses_its_outermost_headings_first_then_goes() -> None:
    body = _text_of(245)
    section = "Chapter one about everything that matters in staging > Part two > 2.1 Imaging"
    row = {"text": body, "body_start": 0, "section": section}
    text, beyond = embed_text(row, COUNT, 254)
    assert beyond == 0 and text.endswith("\n" + body) and COUNT(text) <= 254
    kept = text[: -len(body) - 1]
    assert section.endswith(kept) and kept != section and kept.endswith("2.1 Imaging")
    assert COUNT(search_text(row)) > 254  # before: the model cut the body's last tokens
    # no room for even the innermost heading: the body alone
    assert embed_text({**row, "section": "A very long innermost heading " * 3}, COUNT, 245 + 3) == (body, 0)


def test_a_body_longer_than_the_window_is_embedded_alone_and_counted() -> None:
    body = _text_of(260)
    row = {"text": "Heading\n" + body, "body_start": len("Heading\n"), "section": "Heading"}
    assert embed_text(row, COUNT, 254) == (body, 6)
    assert embed_text({**row, "section": ""}, COUNT, 254) == (body, 6)


@settings(max_examples=60, deadline=None)
@given(
    body_tokens=st.integers(min_value=1, max_value=270),
    path=st.lists(st.integers(min_value=1, max_value=12), min_size=0, max_size=5),
    window=st.sampled_from([64, 128, 254]),
)
def test_embedded_text_fits_and_keeps_the_body(body_tokens: int, path: list[int], window: int) -> None:
    body = _words(body_tokens, 3)
    section = " > ".join(_words(n, k) for k, n in enumerate(path))
    row = {"text": body, "body_start": 0, "section": section}
    text, beyond = embed_text(row, COUNT, window)
    assert beyond == max(0, COUNT(body) - window)
    if beyond:
        assert text == body
        return
    assert text == body or text.endswith("\n" + body)
    assert COUNT(text) <= window
    kept = text[: -len(body) - 1] if text != body else ""
    assert section.endswith(kept)  # whole headings from the innermost, never a cut heading
    parts = section.split(" > ") if section else []
    assert kept == "" or kept in {" > ".join(parts[i:]) for i in range(len(parts))}


@pytest.mark.slow
def test_the_window_is_what_the_model_reads_and_the_report_counts_longer_chunks(tmp_path: Path) -> None:
    """The real model: tokens beyond 254 change nothing in a vector, the 254th does; an ingest
    whose chunks are longer than the window says how many."""
    from grounded.chunking.strategies.semantic import minilm_embedder

    embed = minilm_embedder()
    full = _text_of(254)
    longer, shorter = full + " " + _words(30, 5), _text_of(253)
    a, b, c = embed([full, longer, shorter])
    assert np.allclose(a, b, atol=1e-6) and not np.allclose(a, c, atol=1e-6)
    pdf = make_pdf(tmp_path / "in" / "doc.pdf", 2, 3)
    report = ingest(pdf, tmp_path / "out", embed="minilm", workers=0, max_tokens=400, progress=False)
    assert report.ok and 0 < report.embed_cut <= report.chunks and report.embed_window == 254
    assert f"{report.embed_cut} chunks longer than the embedder's 254-token window" in report.summary()
    fitting = ingest(pdf, tmp_path / "fit", embed="minilm", workers=0, max_tokens=200, progress=False)
    assert fitting.ok and fitting.embed_cut == 0 and "token window" not in fitting.summary()


def test_the_default_bound_is_the_window_when_the_model_embeds_with_its_own_tokenizer() -> None:
    """Defaults that agree (issue 42 item 4): ``--embed minilm`` without ``-n`` chunks to the model's
    254-token window, so no chunk's tail is left out of its vector; any other run keeps 256."""
    from grounded.ingest.worker import DEFAULT_MAX_TOKENS, default_max_tokens
    from grounded.text.tokenizer import DEFAULT_TOKENIZER_NAME

    assert default_max_tokens("minilm", None) == default_max_tokens("minilm", DEFAULT_TOKENIZER_NAME) == 254
    assert default_max_tokens("none", None) == DEFAULT_MAX_TOKENS == 256
    assert default_max_tokens("minilm", "cl100k_base") == 256  # another tokenizer's counts are not the window's


@pytest.mark.slow
def test_an_ingest_with_the_default_bound_embeds_every_chunk_whole(tmp_path: Path) -> None:
    pdf = make_pdf(tmp_path / "in" / "doc.pdf", 2, 3)
    report = ingest(pdf, tmp_path / "out", embed="minilm", workers=0, progress=False)
    assert report.ok and report.chunks > 0 and report.embed_cut == 0 and "token window" not in report.summary()
    import json

    settings = json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]["settings"]
    assert settings["max_tokens"] == 254
