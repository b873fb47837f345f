"""Generation settings (issue 25): temperature, output tokens and seed reach every provider kind, are
part of the model's identity (so of chunker fingerprints), default to the seeds' values per
strategy, come from the CLI, and a re-ask after an invalid answer names the error and nudges the
temperature. Fake clients with hand-written answers (tests/model_fakes.py); no network."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from grounded.chunking import Chunker
from grounded.cli.main import main
from grounded.errors import ChunkingError
from grounded.evaluation.text_reader import read_text_file
from grounded.llm import (
    LLM_CHUNKER_SETTINGS,
    VISION_SETTINGS,
    GenerationSettings,
    as_model,
    nudged,
)
from grounded.llm.llm_strategy import LLMStrategy
from grounded.llm.settings import NUDGE_CAP, excerpt
from grounded.serialization import save_parsing_result
from grounded.text.tokenizer import load_tokenizer
from tests.support.data import REPO
from tests.support.model_fakes import (
    RecordingCallable,
    SettingsChatModel,
    SettingsGenAIClient,
    SettingsLlamaLLM,
)

DOCUMENT = REPO / "tests" / "data" / "llm_chunker" / "document.txt"
TOKENIZER = load_tokenizer()
SETTINGS = GenerationSettings(temperature=0.3, max_tokens=64, seed=7)


# -- the record -----------------------------------------------------------------------------------------
def test_settings_validate_merge_and_name_themselves() -> None:
    assert GenerationSettings(temperature=1).temperature == 1.0 and not GenerationSettings()
    for bad in ({"temperature": -0.1}, {"temperature": 2.5}, {"temperature": float("nan")}, {"temperature": True},
                {"max_tokens": 0}, {"max_tokens": 2.0}, {"seed": "7"}):
        with pytest.raises(ChunkingError):
            GenerationSettings(**bad)
    assert SETTINGS.identity() == "temperature=0.3,max_tokens=64,seed=7"
    assert GenerationSettings(max_tokens=50).over(LLM_CHUNKER_SETTINGS) == GenerationSettings(0.2, 50)
    # the seeds' values: seed 001 T=0.1 (vision), Chroma's LLMSemanticChunker 0.2 and 200 tokens (llm)
    assert GenerationSettings(temperature=0.1) == VISION_SETTINGS
    assert GenerationSettings(temperature=0.2, max_tokens=200) == LLM_CHUNKER_SETTINGS


def test_nudge_raises_a_set_temperature_up_to_the_cap_and_leaves_an_unset_one() -> None:
    base = GenerationSettings(temperature=0.2, max_tokens=200)
    assert nudged(base, 0) == base
    assert nudged(base, 1) == GenerationSettings(temperature=0.4, max_tokens=200)
    assert nudged(base, 10).temperature == NUDGE_CAP
    assert nudged(GenerationSettings(temperature=1.5), 1).temperature == 1.5  # never lowered
    assert nudged(GenerationSettings(max_tokens=9), 3) == GenerationSettings(max_tokens=9)


# -- every provider kind gets them --------------------------------------------------------------------
def test_genai_request_carries_the_settings_in_its_config() -> None:
    client = SettingsGenAIClient(["a", "b"])
    model = as_model(client, model="gemini-2.5-flash", settings=SETTINGS)
    assert model.identity == "google-genai[gemini-2.5-flash]{temperature=0.3,max_tokens=64,seed=7}"
    model.complete("x", system="be terse")
    model.complete("y", settings=GenerationSettings(temperature=0.9))  # a call's own settings win
    first, second = client.models.configs
    assert (first.temperature, first.max_output_tokens, first.seed, first.system_instruction) == (0.3, 64, 7, "be terse")
    assert (second.temperature, second.max_output_tokens, second.seed) == (0.9, None, None)


def test_llama_index_fields_are_set_on_a_copy_and_the_rest_goes_to_chat() -> None:
    llm = SettingsLlamaLLM(replies=["ok"])
    model = as_model(llm, settings=SETTINGS)
    assert model.complete("x") == "ok"
    # the copy answered (the recorded list is shared by the shallow copy); the given object is unchanged
    assert llm.calls == [(0.3, 64, {"seed": 7}, "x")]
    assert (llm.temperature, llm.max_tokens) == (0.7, None)


def test_langchain_fields_are_set_on_a_copy_and_the_rest_goes_to_invoke() -> None:
    chat = SettingsChatModel(replies=["ok"])
    assert as_model(chat, settings=SETTINGS).complete("x") == "ok"
    temperature, kwargs, prompt = chat.calls[0]
    assert temperature == 0.3 and kwargs == {"max_tokens": 64, "seed": 7} and prompt == "x" and chat.temperature == 0.7


def test_a_callable_gets_the_settings_it_accepts_and_a_warning_for_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    fn = RecordingCallable(["ok"])
    as_model(fn, settings=SETTINGS).complete("x")
    assert fn.calls == [("x", 0.3, 64, 7)]
    seen: list[Any] = []

    def plain(prompt: str) -> str:
        seen.append(prompt)
        return "ok"

    model = as_model(plain, settings=SETTINGS)
    with caplog.at_level(logging.WARNING, logger="grounded.llm.model"):
        model.complete("a")
        model.complete("b")
    assert seen == ["a", "b"]
    warned = [r.getMessage() for r in caplog.records if r.name == "grounded.llm.model"]
    assert len(warned) == 1 and "temperature, max_tokens, seed" in warned[0] and "not applied" in warned[0]

    def with_kwargs(prompt: str, **options: Any) -> str:
        seen.append(options)
        return "ok"

    as_model(with_kwargs, settings=GenerationSettings(seed=3)).complete("c")
    assert seen[-1] == {"seed": 3}


def test_settings_are_part_of_the_identity_and_the_fingerprint() -> None:
    fn = RecordingCallable([])
    assert as_model(fn).identity != as_model(fn, settings=GenerationSettings(temperature=0.5)).identity
    default = Chunker(LLMStrategy(256, llm=fn), tokenizer=TOKENIZER)
    warmer = Chunker(LLMStrategy(256, llm=fn, generation={"temperature": 0.5}), tokenizer=TOKENIZER)
    assert "temperature=0.2,max_tokens=200" in default.strategy.params()["llm"]
    assert "temperature=0.5,max_tokens=200" in warmer.strategy.params()["llm"]
    assert default.fingerprint != warmer.fingerprint
    with pytest.raises(ChunkingError, match="unknown generation setting"):
        LLMStrategy(256, llm=fn, generation={"top_k": 3})


# -- the strategies' defaults reach the model ----------------------------------------------------------
def every_fourth_answer(prompt: str) -> str:
    import re

    ids = [int(x) for x in re.findall(r"<\|start_chunk_(\d+)\|>", prompt)]
    return "split_after: " + ", ".join(map(str, ids[3::4] or ids[-1:]))


class EveryFourth(RecordingCallable):
    def __call__(self, prompt: str, *, temperature: float | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> str:
        self.calls.append((prompt, temperature, max_tokens, seed))
        return every_fourth_answer(prompt)


def test_llm_strategy_sends_chromas_settings_by_default_and_given_ones_on_top() -> None:
    document = read_text_file(DOCUMENT)
    fn = EveryFourth([])
    Chunker(LLMStrategy(256, llm=fn), tokenizer=TOKENIZER).chunk(document)
    assert fn.calls and {c[1:] for c in fn.calls} == {(0.2, 200, None)}
    fn2 = EveryFourth([])
    Chunker(LLMStrategy(256, llm=fn2, generation=GenerationSettings(max_tokens=80, seed=1)), tokenizer=TOKENIZER).chunk(document)
    assert {c[1:] for c in fn2.calls} == {(0.2, 80, 1)}
    # a Model that already has settings keeps them under the strategy's given ones
    fn3 = EveryFourth([])
    Chunker(LLMStrategy(256, llm=as_model(fn3, settings=GenerationSettings(temperature=0.0))), tokenizer=TOKENIZER).chunk(document)
    assert {c[1:] for c in fn3.calls} == {(0.0, 200, None)}


def test_vision_strategy_defaults_to_seed_001_temperature() -> None:
    chunker = Chunker("vision", 256, llm=RecordingCallable([]), tokenizer=TOKENIZER)
    assert chunker.strategy.engine.vision_model.settings == VISION_SETTINGS
    assert "{temperature=0.1}" in chunker.strategy.params()["model"]
    given = Chunker("vision", 256, llm=RecordingCallable([]), tokenizer=TOKENIZER, generation={"max_tokens": 4096})
    assert given.strategy.engine.vision_model.settings == GenerationSettings(temperature=0.1, max_tokens=4096)


# -- the re-ask names the error and nudges the temperature -------------------------------------------
def test_reask_names_the_error_and_is_warmer() -> None:
    document = read_text_file(DOCUMENT)
    fn = RecordingCallable(["I would split where the topic changes.", "split_after: 4, 8"])
    strategy = LLMStrategy(256, llm=fn, retries=1)
    Chunker(strategy, tokenizer=TOKENIZER).chunk(document)
    (first, t1, m1, _), (second, t2, m2, _) = fn.calls
    assert first != second and second.startswith(first)
    assert "Your previous answer was invalid: it has no 'split_after:' line" in second
    assert "'I would split where the topic changes.'" in second  # what was received, escaped
    assert "Expected: one line 'split_after: N, M, ...'" in second and "larger than 0 and at most 12" in second
    assert (t1, t2) == (0.2, 0.4) and m1 == m2 == 200
    assert strategy.stats == {"calls": 2, "rejected": 1, "repaired": 0}


def test_a_cut_off_answer_is_re_asked_naming_the_limit() -> None:
    from langchain_core.messages import AIMessage

    document = read_text_file(DOCUMENT)
    replies = [AIMessage(content="split_after: 4, 8, and then I think", response_metadata={"finish_reason": "length"}),
               "split_after: 4, 8"]
    prompts: list[str] = []

    def fn(prompt: str) -> Any:
        prompts.append(prompt)
        return replies.pop(0)

    strategy = LLMStrategy(256, llm=fn, retries=1)
    Chunker(strategy, tokenizer=TOKENIZER).chunk(document)
    assert "cut off or blocked (finish reason LENGTH)" in prompts[1] and strategy.stats["rejected"] == 1


def test_excerpt_escapes_and_cuts() -> None:
    assert excerpt("a\nb") == "'a\\nb'"
    assert excerpt("x" * 300, 10) == "'xxxxxxxxxx'… (300 characters)"


# -- the command line ---------------------------------------------------------------------------------
def recording_model() -> Any:
    """``--llm tests.llm.test_generation_settings:recording_model()``: splits every fourth piece and writes
    the settings of each request to $SETTINGS_LOG."""
    import os

    log = Path(os.environ["SETTINGS_LOG"])

    def answer(prompt: str, *, temperature: float | None = None, max_tokens: int | None = None, seed: int | None = None) -> str:
        with log.open("a") as fh:
            fh.write(json.dumps([temperature, max_tokens, seed]) + "\n")
        return every_fourth_answer(prompt)

    return answer


@pytest.mark.parametrize("command", ["chunk", "ingest"])
def test_help_shows_the_generation_settings(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    for option in ("--llm-temperature", "--llm-max-tokens", "--llm-seed"):
        assert option in out


def test_chunk_cli_passes_the_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO))
    tree = tmp_path / "tree.json"
    save_parsing_result(read_text_file(DOCUMENT), tree)
    log = tmp_path / "settings.log"
    monkeypatch.setenv("SETTINGS_LOG", str(log))
    model = ["--llm", "tests.llm.test_generation_settings:recording_model()"]
    assert main(["chunk", str(tree), "-s", "llm", *model, "--llm-temperature", "0.5", "--llm-max-tokens", "90", "--llm-seed", "11"]) == 0
    assert {tuple(json.loads(line)) for line in log.read_text().splitlines()} == {(0.5, 90, 11)}
    log.unlink()
    assert main(["chunk", str(tree), "-s", "llm", *model]) == 0  # the strategy's defaults
    assert {tuple(json.loads(line)) for line in log.read_text().splitlines()} == {(0.2, 200, None)}
    capsys.readouterr()
    for argv, why in ((["-s", "llm", *model, "--llm-temperature", "3"], "temperature must be a number in [0, 2]"),
                      (["-s", "recursive", "--llm-temperature", "0.5"], "--llm-temperature/--llm-max-tokens/--llm-seed apply")):
        assert main(["chunk", str(tree), *argv]) == 1
        err = capsys.readouterr().err
        assert why in err and err.count("\n") == 1, err


# -- the adapters take them with the llm ----------------------------------------------------------------
@pytest.fixture(scope="module")
def topics_pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import pymupdf

    path = tmp_path_factory.mktemp("settings") / "topics.pdf"
    paragraphs = [p for p in DOCUMENT.read_text(encoding="utf-8").split("\n\n") if p.strip()]
    with pymupdf.open() as doc:
        for chunk in (paragraphs[i : i + 4] for i in range(0, len(paragraphs), 4)):
            page = doc.new_page()
            page.insert_textbox(pymupdf.Rect(60, 60, 540, 800), "\n\n".join(chunk), fontsize=10)
        doc.save(path)
    return path


def test_llama_index_and_langchain_adapters_pass_generation_settings(topics_pdf: Path, tmp_path: Path) -> None:
    from grounded.parsers import get_parser
    from langchain_grounded import GroundedPDFLoader
    from llama_index_grounded import GroundedNodeParser
    from llama_index_grounded.reader import document_from_tree

    root = get_parser("pymupdf").parse(topics_pdf)
    fn = EveryFourth([])
    parser = GroundedNodeParser(strategy="llm", max_tokens=256, llm=fn, generation={"temperature": 0.5, "max_tokens": 60})
    nodes = parser.get_nodes_from_documents(document_from_tree(root))
    assert nodes and fn.calls and {c[1:] for c in fn.calls} == {(0.5, 60, None)}
    other = GroundedNodeParser(strategy="llm", max_tokens=256, llm=fn, generation={"temperature": 0.9})
    assert parser._get_chunker().fingerprint != other._get_chunker().fingerprint

    fn2 = EveryFourth([])
    loader = GroundedPDFLoader(topics_pdf, mode="chunks", strategy="llm", max_tokens=256, llm=fn2,
                               generation=GenerationSettings(seed=5), cache=tmp_path / "cache")
    docs = loader.load()
    assert docs and {c[1:] for c in fn2.calls} == {(0.2, 200, 5)}
