"""A model-chosen focus (issue 40 item 2): the model names unit numbers; the focus is those units'
own spans (a chosen row brings its header), placed like any focus; a reply that names no unit is
re-asked once, then the scored focus is given with a FocusWarning; ``0`` is "none answers"."""

from __future__ import annotations

import pytest

from grounded.errors import ModelOutputError
from grounded.focus import FocusWarning, focus_of
from grounded.llm.focus import model_chooser, model_focus
from grounded.model import Chunk

TEXT = ("Regimens\n\nAdjuvant therapy was well tolerated. Trastuzumab is given for one year.\n\n"
        "Subtype | Regimen | Duration\nHER2+ | Paclitaxel + trastuzumab | 3 months + 1 year\n"
        "Triple-negative | Pembrolizumab | 6 months + 1 year")


class Scripted:
    """A plain callable model that answers from a script and records the prompts."""

    def __init__(self, *answers: str) -> None:
        self.answers = list(answers)
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.answers.pop(0)


def test_the_model_names_units_and_the_focus_is_their_own_text() -> None:
    model = Scripted("4")
    choice = model_focus(TEXT, "How long is pembrolizumab given?", model)
    assert choice.method == "model"
    assert [TEXT[a:b] for a, b in choice.spans] == ["Subtype | Regimen | Duration",
                                                     "Triple-negative | Pembrolizumab | 6 months + 1 year"]
    listed = model.prompts[0]
    assert "[1] Adjuvant therapy was well tolerated." in listed and "[4] Triple-negative" in listed
    assert "Regimens" not in listed.split("Passage:")[1]  # headings and the header row are never offered alone
    assert model_focus(TEXT, "unrelated", Scripted("0")).spans == ()
    assert model_focus(TEXT, "  ", Scripted()).method == "none"  # no call for an empty query


def test_a_reply_without_unit_numbers_is_reasked_then_refused_and_focus_of_falls_back() -> None:
    model = Scripted("the second sentence", "2")
    assert [TEXT[a:b] for a, b in model_focus(TEXT, "How long is trastuzumab given?", model).spans] == [
        "Trastuzumab is given for one year."]
    assert "Your previous answer was invalid" in model.prompts[1]
    with pytest.raises(ModelOutputError, match="named no unit"):
        model_focus(TEXT, "How long is trastuzumab given?", Scripted("nine", "99"))
    chunk = Chunk("c", TEXT, body_start=0)
    with pytest.warns(FocusWarning) as seen:
        f = focus_of(chunk, "How long is trastuzumab given?", embed=None, chooser=model_chooser(Scripted("x", "y")))
    assert any("the scored focus is given" in str(w.message) for w in seen)
    assert f.method == "lexical" and "Trastuzumab is given for one year." in f.texts()
