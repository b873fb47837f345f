"""grounded.llm: the one adapter over injected models. Fakes replay each provider's real
response types (google-genai ``GenerateContentResponse``, LlamaIndex ``ChatResponse`` /
``CompletionResponse``, LangChain ``AIMessage``); no network."""

from __future__ import annotations

import json
import pickle
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    ImageBlock,
    MessageRole,
    TextBlock,
)

from grounded.cli.main import main
from grounded.errors import (
    GroundedError,
    MissingCredentialsError,
    ModelCallError,
    ModelOutputError,
    RemoteServiceError,
)
from grounded.evaluation.text_reader import read_text_file
from grounded.llm import DEFAULT_GEMINI_MODEL, Model, RetryPolicy, UnsupportedModelError, as_model, reply_text
from grounded.llm.spec import ModelSpec, strategy_options, takes_model
from grounded.serialization import save_parsing_result
from tests.support.data import REPO
from tests.support.model_fakes import (
    FakeChatModel,
    FakeGenAIClient,
    FakeLlamaLLM,
    genai_response,
    rate_limited,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
NO_JITTER = RetryPolicy(max_attempts=3, initial_delay=1.0, jitter=0.0)


# -- the four kinds ---------------------------------------------------------------------------------
def test_genai_client_text_images_and_system() -> None:
    client = FakeGenAIClient(["first answer", "second answer"])
    model = as_model(client, model="gemini-2.5-flash")
    assert model.kind == "genai" and model.identity == "google-genai[gemini-2.5-flash]"
    assert model.complete("read these", images=[PNG, PNG], what="pages 1-2") == "first answer"
    assert model.complete("summarize", system="You are terse.") == "second answer"
    first, second = client.models.requests
    assert first["model"] == "gemini-2.5-flash" and first["config"] is None
    parts, prompt = first["contents"][:-1], first["contents"][-1]
    assert prompt == "read these" and [p.inline_data.data for p in parts] == [PNG, PNG]
    assert all(p.inline_data.mime_type == "image/png" for p in parts)
    assert second["contents"] == ["summarize"] and second["config"].system_instruction == "You are terse."
    assert as_model(FakeGenAIClient([])).identity == f"google-genai[{DEFAULT_GEMINI_MODEL}]"


def test_llama_index_llm_chat_blocks_and_system() -> None:
    llm = FakeLlamaLLM(replies=["a table transcription", "split_after: 3"])
    model = as_model(llm)
    assert model.kind == "llama_index" and model.identity == "llama_index:tests.support.model_fakes.FakeLlamaLLM[claude-fake]"
    assert model.complete("transcribe", images=[PNG]) == "a table transcription"
    assert model.complete("where to split?", system="You split texts.") == "split_after: 3"
    (user,), (system, user2) = llm.received
    assert user.role == MessageRole.USER and isinstance(user.blocks[0], ImageBlock)
    assert user.blocks[0].resolve_image().read() == PNG and isinstance(user.blocks[1], TextBlock)
    assert user.blocks[1].text == "transcribe"
    assert system.role == MessageRole.SYSTEM and system.content == "You split texts." and user2.content == "where to split?"


def test_langchain_chat_model_str_and_content_block_replies() -> None:
    blocks = [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "split_after: "}, {"type": "text", "text": "4, 8"}]
    chat = FakeChatModel(replies=[
        AIMessage(content="plain text", response_metadata={"finish_reason": "stop"}),
        AIMessage(content=blocks, response_metadata={"stop_reason": "end_turn"}),  # Anthropic content blocks
    ])
    model = as_model(chat)
    assert model.kind == "langchain" and model.identity == "langchain:tests.support.model_fakes.FakeChatModel[gpt-fake]"
    assert model.complete("describe", images=[PNG]) == "plain text"
    assert model.complete("split", system="You split texts.") == "split_after: 4, 8"  # the thinking block is not text
    (human,), (system, human2) = chat.received
    assert isinstance(human, HumanMessage) and [b["type"] for b in human.content] == ["image_url", "text"]
    assert human.content[0]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert isinstance(system, SystemMessage) and system.content == "You split texts." and human2.content == "split"


def test_plain_callables_get_the_prompt_or_images_and_prompt() -> None:
    calls: list[tuple[Any, ...]] = []

    def fn(*args: Any) -> str:
        calls.append(args)
        return "ok"

    model = as_model(fn)
    assert model.kind == "callable" and model.identity.startswith("callable:tests.llm.test_models.")
    assert model.complete("text only") == model.complete("with images", images=[PNG]) == "ok"
    assert model.complete("user", system="system") == "ok"
    assert calls == [("text only",), ([PNG], "with images"), ("system\n\nuser",)]
    # a callable may return a provider reply object: it is read like the frameworks' replies
    assert as_model(lambda p: AIMessage(content=[{"type": "text", "text": "from blocks"}])).complete("x") == "from blocks"


# -- retries ----------------------------------------------------------------------------------------
def test_rate_limit_then_success_waits_with_backoff() -> None:
    waits: list[float] = []
    client = FakeGenAIClient([rate_limited(), rate_limited(), "finally"])
    assert as_model(client, retry=NO_JITTER, sleep=waits.append).complete("x", what="req") == "finally"
    assert waits == [1.0, 2.0] and len(client.models.requests) == 3


def test_timeouts_exhausted_raise_model_call_error() -> None:
    waits: list[float] = []
    llm = FakeLlamaLLM(replies=[])

    def timeout(*args: Any, **kwargs: Any) -> Any:
        raise TimeoutError("read timed out")

    object.__setattr__(llm, "chat", timeout)  # the client's transport times out on every call
    with pytest.raises(ModelCallError, match=r"^table p3: TimeoutError: read timed out \(after 3 attempts\)$") as err:
        as_model(llm, retry=NO_JITTER, sleep=waits.append).complete("x", what="table p3")
    assert err.value.attempts == 3 and waits == [1.0, 2.0] and isinstance(err.value, RemoteServiceError)


def test_a_rejected_request_is_not_retried() -> None:
    waits: list[float] = []
    denied = genai_errors.ClientError(403, {"error": {"code": 403, "message": "API key not valid", "status": "PERMISSION_DENIED"}})
    with pytest.raises(ModelCallError, match=r"HTTP 403 \(permission denied.*after 1 attempt\)") as err:
        as_model(FakeGenAIClient([denied]), sleep=waits.append).complete("x")
    assert err.value.attempts == 1 and waits == []


# -- bad replies ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (genai_response("   "), "empty answer"),
        (genai_response("half a sent", finish="MAX_TOKENS"), "finish reason MAX_TOKENS"),
        (genai_response("", finish="SAFETY"), "finish reason SAFETY"),
        (genai_types.GenerateContentResponse.model_validate({"prompt_feedback": {"block_reason": "SAFETY"}}),
         r"request was blocked \(SAFETY\)"),
    ],
)
def test_bad_genai_replies(reply: Any, why: str) -> None:
    with pytest.raises(ModelOutputError, match=why):
        as_model(FakeGenAIClient([reply])).complete("x", what="pages 1-4")


def test_bad_framework_replies() -> None:
    cut = ChatResponse(message=ChatMessage(role="assistant", content="cut"), raw={"stop_reason": "max_tokens"})
    with pytest.raises(ModelOutputError, match="finish reason MAX_TOKENS"):
        as_model(FakeLlamaLLM(replies=[cut])).complete("x")
    chat = FakeChatModel(replies=[AIMessage(content="cut", response_metadata={"finish_reason": "length"}), AIMessage(content=[])])
    with pytest.raises(ModelOutputError, match="finish reason LENGTH"):
        as_model(chat).complete("x")
    with pytest.raises(ModelOutputError, match="empty answer"):
        as_model(chat).complete("x")
    with pytest.raises(ModelOutputError, match="answered with a int, not text"):
        as_model(lambda p: 42).complete("x")
    assert as_model(lambda p: "").complete("x", allow_empty=True) == ""  # a caller that re-asks itself


def test_reply_text_reads_completion_responses() -> None:
    assert reply_text(CompletionResponse(text="done", raw={"choices": [{"finish_reason": "stop"}]}), "w") == "done"
    with pytest.raises(ModelOutputError, match="^w: the answer was cut off"):
        reply_text(CompletionResponse(text="do", raw={"choices": [{"finish_reason": "length"}]}), "w")
    assert reply_text(None, "w") == ""


# -- identity, wrapping, errors ---------------------------------------------------------------------
def test_identity_is_stable_and_free_of_object_ids() -> None:
    a, b = FakeChatModel(replies=[]), FakeChatModel(replies=[], model_name="gpt-other")
    assert as_model(a).identity == as_model(FakeChatModel(replies=[])).identity
    assert as_model(a).identity != as_model(b).identity and "gpt-other" in as_model(b).identity
    for obj in (a, lambda p: "x", FakeLlamaLLM(), FakeGenAIClient([])):
        ident = as_model(obj).identity
        assert "0x" not in ident and ident == as_model(obj).identity
    assert repr(as_model(a)) == "Model(langchain:tests.support.model_fakes.FakeChatModel[gpt-fake])"


def test_as_model_keeps_or_copies_a_model() -> None:
    model = as_model(lambda p: "x")
    assert as_model(model) is model and isinstance(model, Model)
    waits: list[float] = []
    copy = as_model(model, retry=NO_JITTER, sleep=waits.append)
    assert copy is not model and copy.target is model.target and copy.retry is NO_JITTER and copy.sleep == waits.append


def test_unsupported_objects_are_typed_errors() -> None:
    with pytest.raises(UnsupportedModelError, match="unsupported model object") as err:
        as_model(object())
    assert isinstance(err.value, TypeError) and isinstance(err.value, GroundedError)


def test_importing_grounded_models_loads_no_framework() -> None:
    code = ("import sys, grounded.llm; print([m for m in ('google.genai', 'llama_index.core', 'langchain_core') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- the commands' model options (grounded.cli.llm_options) ---------------------------------------------------
def every_fourth() -> Any:
    """``--llm tests.llm.test_models:every_fourth()``: a local model splitting after every fourth piece of its window."""

    def answer(prompt: str) -> str:
        ids = [int(x) for x in re.findall(r"<\|start_chunk_(\d+)\|>", prompt)]
        return "split_after: " + ", ".join(map(str, ids[3::4] or ids[-1:]))

    return answer


def broken_factory() -> Any:
    raise KeyError("OPENAI_API_KEY")


@pytest.fixture
def text_tree(tmp_path: Path) -> Path:
    path = tmp_path / "three_topics.json"
    save_parsing_result(read_text_file(REPO / "tests" / "data" / "llm_chunker" / "document.txt"), path)
    return path


def test_chunk_cli_gives_the_llm_strategy_a_model(text_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(REPO))
    assert main(["chunk", str(text_tree), "-s", "llm"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--strategy llm needs a language model" in err and "--llm-model/--vision-model NAME" in err
    out = tmp_path / "chunks.jsonl"
    assert main(["chunk", str(text_tree), "-s", "llm", "--llm", "tests.llm.test_models:every_fourth()", "-o", str(out)]) == 0
    assert "chunks (llm, N=256)" in capsys.readouterr().out
    header, *rows = (json.loads(line) for line in out.read_text().splitlines())
    assert "schema" in header and [r["content"].split()[:2] for r in rows] == [["Honey", "bees"], ["The", "Roman"], ["Sourdough", "bread"]]
    for argv, why in (
        (["-s", "recursive", "--llm", "tests.llm.test_models:every_fourth()"], "apply to the model-driven strategies"),
        (["-s", "llm", "--llm", "tests.llm.test_models"], "expected MODULE:OBJECT"),
        (["-s", "llm", "--llm", "tests.llm.test_models:nothing_here"], "cannot import it"),
        (["-s", "llm", "--llm", "tests.llm.test_models:broken_factory()"], "the factory failed: KeyError: 'OPENAI_API_KEY'"),
    ):
        assert main(["chunk", str(text_tree), *argv]) == 1
        err = capsys.readouterr().err
        assert why in err and err.count("\n") == 1, err


def test_ingest_cli_refuses_a_model_driven_strategy_without_a_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pdf = tmp_path / "one.pdf"
    with pymupdf.open() as doc:
        doc.new_page().insert_text((72, 72), "A page of text.")
        doc.save(pdf)
    out = tmp_path / "out"
    for strategy, kind in (("llm", "a language model"), ("vision", "a multimodal model")):
        assert main(["ingest", str(pdf), "-o", str(out), "-s", strategy, "-q"]) == 1
        err = capsys.readouterr().err
        assert f"--strategy {strategy} needs {kind}: --llm-model NAME" in err and "--llm MODULE:OBJECT" in err
    assert main(["ingest", str(pdf), "-o", str(out), "--llm-model", "gemini-2.5-flash", "-q"]) == 1
    assert "not to 'recursive'" in capsys.readouterr().err
    assert not out.exists()  # refused before any work


def test_model_spec_is_picklable_and_builds_a_gemini_client_only_with_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = ModelSpec(name="gemini-2.5-flash")
    assert pickle.loads(pickle.dumps(spec)) == spec and bool(spec) and not ModelSpec()
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError, match="GEMINI_API_KEY or GOOGLE_API_KEY"):
        strategy_options("llm", spec)
    monkeypatch.setenv("GEMINI_API_KEY", "test-key")  # the client is built offline; nothing is sent
    options = strategy_options("vision", spec)
    assert options["model"] == "gemini-2.5-flash" and as_model(options["llm"], model=options["model"]).kind == "genai"
    assert takes_model("llm") and takes_model("vision") and not takes_model("recursive")
