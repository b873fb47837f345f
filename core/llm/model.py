"""``Model``: one injected model behind ``complete(prompt, *, system, images, what) -> str``.

Transient failures (HTTP 408/429/5xx, timeouts, dropped connections) are retried with exponential
backoff (:func:`grounded.runtime.cloud.call_with_retries`: ``retry`` policy, injectable ``sleep``).
A call that still fails - retries used up, a rejected request, an exception of the client - raises
:class:`~grounded.errors.ModelCallError`; an answer that is empty, not text, cut off or blocked
raises :class:`~grounded.errors.ModelOutputError`. ``settings`` (:class:`~grounded.llm.GenerationSettings`)
go with every request (a call may pass its own, e.g. a re-ask's nudged temperature) and are part of
:attr:`Model.identity`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import GroundedError, ModelCallError, ModelError, ModelOutputError, RemoteServiceError
from ..runtime.cloud import RetryPolicy, _describe, call_with_retries
from .adapters import Kind, identity, kind_of, send, unapplied
from .replies import reply_text
from .settings import GenerationSettings, as_settings

__all__ = ["Model", "as_model"]

log = logging.getLogger(__name__)


class Model:
    """An injected model (see :mod:`grounded.llm.adapters` for the four kinds). ``model``: the
    Gemini model name for a google-genai client; ``retry``: backoff policy (default
    :class:`~grounded.runtime.cloud.RetryPolicy`); ``sleep``: the wait between attempts;
    ``settings``: generation settings of every request (temperature, output tokens, seed)."""

    def __init__(
        self,
        target: Any,
        *,
        model: str | None = None,
        retry: RetryPolicy | None = None,
        sleep: Callable[[float], None] = time.sleep,
        settings: GenerationSettings | None = None,
    ) -> None:
        self.kind: Kind = kind_of(target)
        self.target = target
        self.model = model
        self.retry = retry
        self.sleep = sleep
        self.settings = as_settings(settings)
        #: stable name for cache fingerprints (no object ids); includes the generation settings
        self.identity = identity(target, self.kind, model, self.settings)
        self._told: set[str] = set()

    def __repr__(self) -> str:
        return f"Model({self.identity})"

    def complete(
        self,
        prompt: str,
        *,
        system: str | None = None,
        images: Sequence[bytes] = (),
        what: str = "model call",
        allow_empty: bool = False,
        settings: GenerationSettings | None = None,
    ) -> str:
        """The model's text answer to ``prompt`` (+ ``system`` prompt, + PNG ``images``); ``what``
        names the request in errors; ``allow_empty`` returns an empty answer instead of refusing it;
        ``settings``: this request's generation settings (default: the model's)."""
        attempts = 0
        pngs = list(images)
        used = self.settings if settings is None else settings
        missing = [k for k in unapplied(self.target, self.kind, used) if k not in self._told]
        if missing:
            self._told.update(missing)
            log.warning("%s: the callable takes no keyword argument(s) %s; those generation settings are not applied",
                        self.identity, ", ".join(missing))

        def ask() -> Any:
            nonlocal attempts
            attempts += 1
            return send(self.target, self.kind, self.model, prompt, system, pngs, used)

        try:
            reply = call_with_retries(ask, backend="model", source=what, policy=self.retry, sleep=self.sleep, what="call")
        except ModelError:
            raise
        except RemoteServiceError as exc:
            cause = exc.__cause__ if exc.__cause__ is not None else exc
            raise ModelCallError(what, _describe(cause), attempts) from exc
        except GroundedError:  # e.g. a missing optional dependency: its own message says what to install
            raise
        except Exception as exc:  # a client's own error (bad key, bug) is a failed call
            raise ModelCallError(what, _describe(exc), attempts) from exc
        text = reply_text(reply, what)
        if not allow_empty and not text.strip():
            raise ModelOutputError(what, "the model returned an empty answer")
        return text


def as_model(
    obj: Any,
    *,
    model: str | None = None,
    retry: RetryPolicy | None = None,
    sleep: Callable[[float], None] | None = None,
    settings: GenerationSettings | None = None,
) -> Model:
    """``obj`` as a :class:`Model`: a Model is returned as it is unless options are given (then a copy
    over the same client with those options; ``settings`` replace its settings); anything else is
    wrapped (see :class:`Model`)."""
    if isinstance(obj, Model):
        if model is None and retry is None and sleep is None and settings is None:
            return obj
        return Model(obj.target, model=model or obj.model, retry=retry or obj.retry, sleep=sleep or obj.sleep,
                     settings=obj.settings if settings is None else settings)
    return Model(obj, model=model, retry=retry, sleep=sleep or time.sleep, settings=settings)
