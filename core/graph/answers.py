"""JSON answers of the graph's model requests: read the first JSON value of an answer, and ask once
more - naming what was wrong - when there is none.

An answer may wrap its JSON in prose or a code fence. When no JSON value can be read the error says
what was received (a short escaped excerpt, :func:`grounded.llm.settings.excerpt`): "no JSON in
the answer" when nothing in it looks like JSON (prose, an echoed ``[n1]`` item label), "malformed
JSON" when a value starts like JSON (``{"``, ``[{``, ``["``) but does not parse.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from typing import Any, TypeVar

from ..errors import ModelOutputError
from ..llm import Model, nudged, reask_prompt
from ..llm.settings import excerpt

__all__ = ["read_json", "ask_json"]

_JSON_START = re.compile(r"""[\[{]\s*["{\[\]}]""")  # {" [{ [" [] {}: not a citation such as [1]
R = TypeVar("R")
log = logging.getLogger(__name__)


def read_json(answer: str, what: str) -> Any:
    """The first-opened JSON object or array of ``answer`` (code fences and prose around it allowed);
    :class:`~grounded.errors.ModelOutputError` naming what was received when there is none."""
    text = answer.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.DOTALL)
    if fenced:
        text = fenced.group(1)
    malformed: str | None = None
    pairs = sorted((("{", "}"), ("[", "]")), key=lambda pair: text.find(pair[0]) % (len(text) + 1))
    for opener, closer in pairs:  # the first-opened JSON value, else the other (prose around it allowed)
        start, end = text.find(opener), text.rfind(closer)
        if start >= 0:
            candidate = text[start : end + 1] if end > start else text[start:]  # no closer: cut off
            try:
                return json.loads(candidate)
            except json.JSONDecodeError as exc:
                if malformed is None and _JSON_START.match(candidate):
                    malformed = f"malformed JSON ({exc.msg} at char {exc.pos})"
    received = excerpt(answer.strip()) if answer.strip() else "an empty answer"
    if malformed is not None:
        raise ModelOutputError(what, f"{malformed}; received {received}")
    raise ModelOutputError(what, f"no JSON in the answer; received {received}")


def ask_json(
    model: Model,
    prompt: str,
    what: str,
    expected: str,
    read: Callable[[str, str], R],
    *,
    retries: int = 1,
    on_call: Callable[[], None] | None = None,
) -> R:
    """``read(answer, what)`` of the model's answer to ``prompt``: an answer that ``read`` refuses (a
    :class:`~grounded.errors.ModelOutputError`) is asked for again ``retries`` times, the prompt naming
    the error and ``expected``, the temperature nudged (:func:`grounded.llm.nudged`); the last
    error is raised. ``on_call`` is called before every request (counting)."""
    current = prompt
    for attempt in range(retries + 1):
        if on_call is not None:
            on_call()
        answer = model.complete(current, what=what, settings=nudged(model.settings, attempt))
        try:
            return read(answer, what)
        except ModelOutputError as exc:
            if attempt == retries:
                raise
            log.warning("%s; asking again", exc)
            current = reask_prompt(prompt, answer, exc.cause, expected)
    raise AssertionError("unreachable")  # pragma: no cover
