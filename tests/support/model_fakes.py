"""Fake models of each provider kind, replaying hand-written answers in the provider's real response
types (google-genai ``GenerateContentResponse``, LlamaIndex ``ChatResponse``, LangChain ``AIMessage``).

* ``FakeGenAIClient``, ``FakeLlamaLLM``, ``FakeChatModel``: record the requests / messages they got
  (tests/llm/test_models.py, tests/llm/test_vision.py); ``genai_response`` and ``rate_limited`` build
  the SDK's own reply and 429 error.
* ``Settings*`` and ``RecordingCallable``: record the generation settings each call carried (the
  model's fields at call time, and the keyword arguments of the call).

No network.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from google.genai import errors as genai_errors
from google.genai import types as genai_types
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from llama_index.core.base.llms.types import (
    ChatMessage,
    ChatResponse,
    CompletionResponse,
    LLMMetadata,
    MessageRole,
)
from llama_index.core.llms.custom import CustomLLM
from pydantic import Field


# -- fakes that record requests ---------------------------------------------------------------------
def genai_response(text: str, finish: str = "STOP") -> genai_types.GenerateContentResponse:
    return genai_types.GenerateContentResponse.model_validate(
        {
            "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finish_reason": finish, "index": 0}],
            "model_version": "gemini-2.5-flash",
        }
    )


class FakeGenAIModels:
    """``client.models`` of google-genai: records requests, replays ``GenerateContentResponse`` s (a
    string becomes one; an exception is raised)."""

    def __init__(self, replies: Sequence[Any]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []

    def generate_content(self, *, model: str, contents: list[Any], config: Any = None) -> genai_types.GenerateContentResponse:
        self.requests.append({"model": model, "contents": contents, "config": config})
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return reply if isinstance(reply, genai_types.GenerateContentResponse) else genai_response(reply)


class FakeGenAIClient:
    def __init__(self, replies: Sequence[Any]) -> None:
        self.models = FakeGenAIModels(replies)


def rate_limited() -> genai_errors.ClientError:
    return genai_errors.ClientError(429, {"error": {"code": 429, "message": "Resource has been exhausted.", "status": "RESOURCE_EXHAUSTED"}})


class FakeLlamaLLM(CustomLLM):
    """A LlamaIndex LLM answering ``ChatResponse`` s (a string: raw = an Anthropic message) and recording
    the chats."""

    replies: list[Any] = Field(default_factory=list)
    received: list[list[ChatMessage]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="claude-fake", is_chat_model=True)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.received.append(list(messages))
        reply = self.replies.pop(0)
        if isinstance(reply, ChatResponse):
            return reply
        raw = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": reply}], "stop_reason": "end_turn"}
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=reply), raw=raw)

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise AssertionError("requests go through chat()")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        raise AssertionError("not used")


class FakeChatModel(BaseChatModel):
    """A LangChain chat model replaying ``AIMessage`` s (a string becomes one that finished normally) and
    recording the messages it got."""

    replies: list[Any] = Field(default_factory=list)
    received: list[list[BaseMessage]] = Field(default_factory=list)
    model_name: str = "gpt-fake"

    @property
    def _llm_type(self) -> str:
        return "fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.received.append(list(messages))
        reply = self.replies.pop(0)
        if not isinstance(reply, AIMessage):
            reply = AIMessage(content=reply, response_metadata={"finish_reason": "stop", "model_name": self.model_name})
        return ChatResult(generations=[ChatGeneration(message=reply)])


# -- fakes that record generation settings ------------------------------------------------------------

class SettingsGenAIModels:
    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.configs: list[Any] = []

    def generate_content(self, *, model: str, contents: list[Any], config: Any = None) -> genai_types.GenerateContentResponse:
        self.configs.append(config)
        return genai_types.GenerateContentResponse.model_validate({
            "candidates": [{"content": {"role": "model", "parts": [{"text": self.replies.pop(0)}]}, "finish_reason": "STOP"}],
        })


class SettingsGenAIClient:
    """A google-genai client stand-in: ``models.configs`` holds each request's ``GenerateContentConfig``."""

    def __init__(self, replies: Sequence[str]) -> None:
        self.models = SettingsGenAIModels(replies)


class SettingsLlamaLLM(CustomLLM):
    """A LlamaIndex LLM with ``temperature`` / ``max_tokens`` fields (like the OpenAI and Anthropic
    integrations); ``calls`` records (temperature, max_tokens, chat kwargs, prompt) of each chat."""

    temperature: float = 0.7
    max_tokens: int | None = None
    replies: list[str] = Field(default_factory=list)
    calls: list[tuple[float, int | None, dict[str, Any], str]] = Field(default_factory=list)

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="settings-fake", is_chat_model=True)

    def chat(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatResponse:
        self.calls.append((self.temperature, self.max_tokens, dict(kwargs), str(messages[-1].content)))
        return ChatResponse(message=ChatMessage(role=MessageRole.ASSISTANT, content=self.replies.pop(0)))

    def complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> CompletionResponse:
        raise AssertionError("requests go through chat()")

    def stream_complete(self, prompt: str, formatted: bool = False, **kwargs: Any) -> Iterator[CompletionResponse]:
        raise AssertionError("not used")


class SettingsChatModel(BaseChatModel):
    """A LangChain chat model with a ``temperature`` field (no ``max_tokens`` field: that one arrives as
    an invoke keyword); ``calls`` records (temperature, kwargs, last message text)."""

    temperature: float = 0.7
    model_name: str = "settings-fake"
    replies: list[str] = Field(default_factory=list)
    calls: list[tuple[float, dict[str, Any], str]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "settings-fake"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        self.calls.append((self.temperature, dict(kwargs), str(messages[-1].content)))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=self.replies.pop(0)))])


class RecordingCallable:
    """``fn(prompt, *, temperature=None, max_tokens=None, seed=None) -> str`` replaying answers; ``calls``
    records (prompt, temperature, max_tokens, seed)."""

    def __init__(self, replies: Sequence[str]) -> None:
        self.replies = list(replies)
        self.calls: list[tuple[str, float | None, int | None, int | None]] = []

    def __call__(self, prompt: str, *, temperature: float | None = None, max_tokens: int | None = None,
                 seed: int | None = None) -> str:
        self.calls.append((prompt, temperature, max_tokens, seed))
        return self.replies.pop(0)
