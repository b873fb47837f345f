"""MiniLM embeds 256 word pieces and cuts the rest silently: the bundled embedding classes warn once
per instance when a text is longer, and the splitters warn once when they are made with a larger
chunk_size and the default MiniLM tokenizer (issue 31.4, SPEC 15)."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

from grounded.text.embed_input import MINILM_MAX_TOKENS, EmbeddingInputWarning
from grounded.text.tokenizer import minilm_tokenizer

SENTENCE = "Patients with chronic heart failure were asked about their experience of cardiac rehabilitation. "


def _text(tokens: int) -> str:
    tok = minilm_tokenizer()
    text = SENTENCE * (tokens // tok.count(SENTENCE) + 1)
    while tok.count(text) > tokens:
        text = text.rsplit(" ", 1)[0]
    return text


def _embedding_classes() -> list[Any]:
    from langchain_grounded import MiniLMEmbeddings
    from llama_index_grounded import MiniLMEmbedding

    return [MiniLMEmbedding(), MiniLMEmbeddings()]


def _embed(model: Any, texts: list[str]) -> list[list[float]]:
    return model.get_text_embedding_batch(texts) if hasattr(model, "get_text_embedding_batch") else model.embed_documents(texts)


def _no_model(model: Any) -> Any:
    """The model's loading is not what is tested here: vectors of zeros in its place."""
    model._embed = lambda texts: np.zeros((len(texts), 4), dtype=np.float32)
    return model


@pytest.mark.parametrize("index", [0, 1], ids=["MiniLMEmbedding", "MiniLMEmbeddings"])
def test_embedding_classes_warn_once_per_instance_on_texts_longer_than_minilm_reads(index: int) -> None:
    model = _no_model(_embedding_classes()[index])
    short, long = _text(MINILM_MAX_TOKENS), _text(684)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingInputWarning)
        _embed(model, [short, short])  # 256 tokens: the splitters' default size, no warning
    with pytest.warns(EmbeddingInputWarning, match=r"1 of 2 texts .*\(longest 684\).*first 256") as caught:
        _embed(model, [short, long])
    assert len(caught) == 1
    if index == 1:  # LangChain: the warning points at the caller's line (LlamaIndex calls through its dispatcher)
        assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmbeddingInputWarning)
        _embed(model, [long])  # once per instance
    with pytest.warns(EmbeddingInputWarning):
        _embed(_no_model(_embedding_classes()[index]), [long])  # a new instance warns again


@pytest.mark.slow
def test_minilm_really_embeds_only_the_first_256_word_pieces() -> None:
    from langchain_grounded import MiniLMEmbeddings

    tok = minilm_tokenizer()
    long = _text(684)
    ids, spans = tok.encode_batch([long])[0]
    head = long[: spans[MINILM_MAX_TOKENS - 3][1]]  # 254 word pieces + [CLS] + [SEP]
    model = MiniLMEmbeddings(device="cpu")
    with pytest.warns(EmbeddingInputWarning):
        full, first = model.embed_documents([long, head])
    assert float(np.dot(full, first)) > 0.9999  # what the warning says: the rest is not embedded


def test_splitters_warn_once_when_chunk_size_exceeds_minilm_input() -> None:
    from langchain_grounded import GroundedTextSplitter
    from llama_index_grounded import GroundedNodeParser

    for make in (lambda n, **kw: GroundedTextSplitter(chunk_size=n, **kw), lambda n, **kw: GroundedNodeParser(chunk_size=n, **kw)):
        with pytest.warns(EmbeddingInputWarning, match=r"chunk_size=1000.*only the first 256") as caught:
            make(1000)
        assert len([w for w in caught if issubclass(w.category, EmbeddingInputWarning)]) == 1
        assert caught[0].filename == __file__
        with warnings.catch_warnings():
            warnings.simplefilter("error", EmbeddingInputWarning)
            make(256)  # the default size fits
            make(1000, tokenizer="cl100k_base")  # another tokenizer: another model, the splitter cannot know
        with warnings.catch_warnings():  # easy to silence
            warnings.filterwarnings("error")
            warnings.filterwarnings("ignore", category=EmbeddingInputWarning)
            make(1000)


def test_llama_index_from_defaults_warns_too() -> None:
    from llama_index_grounded import GroundedNodeParser

    with pytest.warns(EmbeddingInputWarning, match="GroundedNodeParser"):
        GroundedNodeParser.from_defaults(chunk_size=512)
