"""Fake models of each provider kind that record the generation settings they were called with.

Each fake replays hand-written answers in its provider's real response type and records, per call,
the prompt text and the settings the request carried (the model's fields at call time, and the
keyword arguments of the call). No network.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

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
