"""A model-chosen focus (optional): the configured model reads a chunk's units, numbered, and names
the ones that answer the query; the focus is those units' exact spans, placed like any focus.

The model never writes the text it points to: it answers with unit numbers, so what it picks is the
chunk's own text (nothing to re-find), and a reply naming no valid unit is re-asked once, then
refused (:class:`~grounded.errors.ModelOutputError`) - the caller falls back to the scored focus
(:func:`grounded.focus.focus_texts`), never to no focus because of a model. ``0`` means "none answers".
"""

from __future__ import annotations

import re

from ..errors import ModelOutputError
from ..focus.select import Choice, Chooser, unit_spans, with_headers
from ..focus.units import units
from .model import Model, as_model
from .settings import reask_prompt

__all__ = ["model_focus", "model_chooser", "FOCUS_PROMPT"]

FOCUS_PROMPT = """Below is a passage cut into numbered units (sentences, table rows or list items) and a question.
Answer with the numbers of the units that answer the question (the fewest that do), separated by commas,
for example: 3 or 3, 4. Answer 0 if no unit answers it. Answer with numbers only.

Question: {query}

Passage:
{units}"""


def _numbers(answer: str, last: int) -> list[int] | None:
    found = [int(n) for n in re.findall(r"\d+", answer)]
    if found == [0]:
        return []
    good = [n for n in found if 1 <= n <= last]
    return list(dict.fromkeys(good)) if good and len(good) == len(found) else None


def model_focus(text: str, query: str, model: object, *, body_start: int = 0) -> Choice:
    """The units of ``text`` the model names as answering ``query`` (method ``model``); an empty
    focus for an empty query or a chunk without candidate units (no call is made then)."""
    all_units = units(text, body_start)
    candidates = [u for u in all_units if u.kind not in ("heading", "header")]
    if not query.strip() or not candidates:
        return Choice((), "none")
    m = model if isinstance(model, Model) else as_model(model)
    listed = "\n".join(f"[{i}] {' '.join(u.text(text).split())}" for i, u in enumerate(candidates, 1))
    prompt = FOCUS_PROMPT.format(query=" ".join(query.split()), units=listed)
    expected = f"unit numbers between 1 and {len(candidates)}, or 0"
    answer = m.complete(prompt, what="model focus")
    numbers = _numbers(answer, len(candidates))
    if numbers is None:
        answer = m.complete(reask_prompt(prompt, answer, "not unit numbers of the passage", expected), what="model focus")
        numbers = _numbers(answer, len(candidates))
    if numbers is None:
        raise ModelOutputError("model focus", f"the model named no unit of the passage ({answer[:80]!r}; expected {expected})")
    chosen = [candidates[n - 1] for n in numbers]
    return Choice(unit_spans(text, with_headers(chosen, all_units)), "model")


def model_chooser(model: object) -> Chooser:
    """:func:`model_focus` with ``model`` as a chooser for :func:`grounded.focus.focus_of` (``chooser=``)."""
    m = model if isinstance(model, Model) else as_model(model)

    def choose(text: str, body_start: int, query: str) -> Choice:
        return model_focus(text, query, m, body_start=body_start)

    return choose
