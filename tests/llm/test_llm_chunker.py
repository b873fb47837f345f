"""The ``llm`` strategy (Chroma's LLMSemanticChunker): prompts with numbered piece markers, answers
replayed in the providers' formats through each supported model type (plain callable, LangChain
chat model, LlamaIndex LLM), invalid answers repaired deterministically, and the chunk invariants on
a shared PDF. Fixtures: tests/data/llm_chunker/ (see its README)."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from llama_index.core.llms import CompletionResponse, CustomLLM, LLMMetadata
from llama_index.core.llms.callbacks import llm_completion_callback

from grounded.chunking import Chunker
from grounded.chunking.base import strategy_class
from grounded.errors import ChunkingError, ModelCallError, ModelOutputError, RemoteServiceError
from grounded.evaluation.text_reader import read_text_file
from grounded.llm import RetryPolicy, UnsupportedModelError, as_model
from grounded.llm.llm_strategy import LLMStrategy, parse_split_after
from grounded.model import ParsingResult
from grounded.text.tokenizer import load_tokenizer
from tests.support.chunk_checks import check_invariants
from tests.support.data import TEST_DATA
from tests.support.shared_parses import SharedParses

DATA = TEST_DATA / "llm_chunker"
TOKENIZER = load_tokenizer()
TOPICS = ("Honey bees", "The Roman aqueducts", "Sourdough bread")


def _json(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def document() -> ParsingResult:
    return read_text_file(DATA / "document.txt")


class OpenAIReplay:
    """A callable ``prompt -> str`` that replays OpenAI Chat Completions objects in order and
    records the prompts."""

    def __init__(self, responses: list[dict[str, Any]]) -> None:
        self._responses = iter(responses)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return str(next(self._responses)["choices"][0]["message"]["content"])


class ReplayLlamaIndexLLM(CustomLLM):
    """A LlamaIndex LLM replaying answer texts (its ``chat`` is LlamaIndex's own, built on ``complete``)."""

    answers: list[str]
    prompts: list[str] = []

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="replay")

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        self.prompts.append(prompt)
        return CompletionResponse(text=self.answers.pop(0))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        yield self.complete(prompt, formatted, **kwargs)


def _chunk_starts(result: Any) -> list[str]:
    return [c.body[:30] for c in result.chunks]


# -- the three model types, fed the fixtures ----------------------------------------------------------
@pytest.mark.parametrize("window", ["window_800", "window_100"])
def test_plain_callable_with_openai_responses(document: ParsingResult, window: str) -> None:
    replay = OpenAIReplay(_json("openai_chat_completions.json")[window])
    chunker = Chunker("llm", 256, tokenizer=TOKENIZER, llm=replay, window_tokens=800 if window == "window_800" else 100)
    result = chunker.chunk(document)
    assert [c.body.split("\n")[0][: len(t)] for c, t in zip(result.chunks, TOPICS)] == list(TOPICS)
    assert len(result.chunks) == 3
    strategy = chunker.strategy
    assert isinstance(strategy, LLMStrategy)
    assert strategy.stats == {"calls": len(replay.prompts), "rejected": 0, "repaired": 0}
    # the prompt carries every piece of the window verbatim between numbered markers
    first = replay.prompts[0]
    assert "<|start_chunk_1|>Honey bees live in colonies" in first and "<|end_chunk_1|>" in first
    assert "split_after: 3, 5" in first  # the answer format is in the system prompt
    if window == "window_100":
        assert len(replay.prompts) == 2
        assert "<|start_chunk_4|>" in first and "<|start_chunk_5|>" not in first
        assert "<|start_chunk_5|>The Roman aqueducts" in replay.prompts[1] and "larger than 4" in replay.prompts[1]
    else:
        assert len(replay.prompts) == 1 and "<|start_chunk_12|>" in first
    check_invariants(document, result, chunker.stream(document), 256, overlap=False, page_count=0)


def test_langchain_chat_model_with_anthropic_content_blocks(document: ParsingResult) -> None:
    answers = _json("anthropic_messages.json")["window_100"]
    model = GenericFakeChatModel(messages=iter(AIMessage(content=a["content"]) for a in answers))
    result = Chunker("llm", 256, tokenizer=TOKENIZER, llm=model, window_tokens=100).chunk(document)
    assert [c.body[: len(t)] for c, t in zip(result.chunks, TOPICS)] == list(TOPICS)


def test_llama_index_llm(document: ParsingResult) -> None:
    answers = [a["content"][0]["text"] for a in _json("anthropic_messages.json")["window_100"]]
    llm = ReplayLlamaIndexLLM(answers=answers, prompts=[])
    chunker = Chunker("llm", 256, tokenizer=TOKENIZER, llm=llm, window_tokens=100)
    result = chunker.chunk(document)
    assert [c.body[: len(t)] for c, t in zip(result.chunks, TOPICS)] == list(TOPICS)
    assert len(llm.prompts) == 2 and "<|start_chunk_1|>" in llm.prompts[0]
    assert "ReplayLlamaIndexLLM" in chunker.strategy.params()["llm"]  # the model is part of the fingerprint


# -- invalid answers ------------------------------------------------------------------------------------
@pytest.mark.parametrize("case", _json("malformed_answers.json"), ids=lambda c: c["name"])
def test_invalid_answers_are_repaired_deterministically(document: ParsingResult, case: dict[str, Any], caplog: pytest.LogCaptureFixture) -> None:
    answers = list(case["answers"])
    prompts: list[str] = []

    def model(prompt: str) -> str:
        prompts.append(prompt)
        return answers.pop(0)

    strategy = LLMStrategy(256, llm=model, retries=1)
    chunker = Chunker(strategy, tokenizer=TOKENIZER)
    with caplog.at_level(logging.WARNING, logger="grounded.llm.llm_strategy"):
        result = chunker.chunk(document)
    pieces = chunker.stream(document)
    assert strategy.stats == {"calls": case["calls"], "rejected": case["rejected"], "repaired": case["repaired"]}
    mine = [r for r in caplog.records if r.name == "grounded.llm.llm_strategy"]
    assert len(mine) == case["rejected"] + case["repaired"]
    if case["rejected"]:  # the re-ask names the rejected answer
        assert "was invalid" in prompts[1]
    # chunk boundaries: the expected split points (long runs re-split below N, never merged across)
    starts = [c.metadata["start_char"] for c in result.chunks]
    text = document_text_of(document)
    for split in case["splits"][:-1]:
        para = text.split("\n\n")[split]
        assert text.index(para) in starts, (split, para[:30])
    check_invariants(document, result, pieces, 256, overlap=False, page_count=0)


def document_text_of(root: ParsingResult) -> str:
    from grounded.chunking import document_text

    return document_text(root).text


def test_parse_split_after() -> None:
    assert parse_split_after("split_after: 3, 5") == [3, 5]
    assert parse_split_after("Split_After 7") == [7]
    assert parse_split_after("split_after: 1\nsplit_after: 2, 9") == [2, 9]  # the last line counts
    assert parse_split_after("no numbers here") is None
    assert parse_split_after("split_after:") == []


def test_a_reply_that_is_not_text_is_a_typed_error(document: ParsingResult) -> None:
    with pytest.raises(ModelOutputError, match="pieces 1-12: the model answered with a int, not text"):
        Chunker("llm", 256, tokenizer=TOKENIZER, llm=lambda prompt: 42).chunk(document)


def test_a_failing_model_call_is_a_typed_error(document: ParsingResult) -> None:
    def offline(prompt: str) -> str:
        raise ConnectionError("api.openai.com unreachable")

    waits: list[float] = []
    retry = RetryPolicy(max_attempts=2, initial_delay=1.0, jitter=0.0)
    with pytest.raises(RemoteServiceError, match="pieces 1-12: .*unreachable") as err:
        Chunker("llm", 256, tokenizer=TOKENIZER, llm=offline, retry=retry, sleep=waits.append).chunk(document)
    assert isinstance(err.value, ModelCallError) and err.value.attempts == 2 and waits == [1.0]  # a dropped connection is retried


def test_configuration_errors() -> None:
    assert strategy_class("llm") is LLMStrategy
    with pytest.raises(ChunkingError, match="needs a model"):
        Chunker("llm", 256).chunk(read_text_file(DATA / "document.txt"))
    for options in ({"piece_tokens": 0}, {"piece_tokens": 300}, {"window_tokens": 0}, {"retries": -1}):
        with pytest.raises(ChunkingError):
            Chunker("llm", 256, llm=lambda p: "split_after: 1", **options)
    with pytest.raises(ChunkingError, match="overlap must be 0"):
        Chunker("llm", 256, 10, llm=lambda p: "split_after: 1")
    with pytest.raises(UnsupportedModelError, match="callable"):
        as_model(object())
    with pytest.raises(UnsupportedModelError, match="callable"):
        Chunker("llm", 256, llm=object())


# -- invariants on a shared PDF -------------------------------------------------------------------------
def _every_third(prompt: str) -> str:
    """A model that splits after every third piece of its window (OpenAI-format reply, text extracted)."""
    ids = [int(x) for x in re.findall(r"<\|start_chunk_(\d+)\|>", prompt)]
    picks = ids[2::3] or ids[-1:]
    response = {"choices": [{"message": {"role": "assistant", "content": "split_after: " + ", ".join(map(str, picks))}}]}
    return str(response["choices"][0]["message"]["content"])


@pytest.mark.parametrize("max_tokens", [64, 256])
def test_invariants_on_a_shared_pdf(clinsci_pdf: Path, shared_parses: SharedParses, max_tokens: int) -> None:
    root = shared_parses.tree(clinsci_pdf)
    strategy = LLMStrategy(max_tokens, llm=_every_third)
    chunker = Chunker(strategy, tokenizer=TOKENIZER)
    result = chunker.chunk(root)
    assert len(result.chunks) > 10 and strategy.stats["calls"] > 5 and strategy.stats["rejected"] == 0
    check_invariants(root, result, chunker.stream(root), max_tokens, overlap=False, page_count=root.metadata["page_count"])
    stream = chunker.stream(root)
    assert result.chunks[0].metadata["start_char"] == stream.char_span(0, 1)[0]
    shared_parses.assert_unchanged(root)
