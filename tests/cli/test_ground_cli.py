"""``grounded ground PDF|parsed.json CHUNKS.txt|CHUNKS.jsonl`` (#10.2): chunk files in both formats,
output in the ``grounded chunk`` schema (``grounded highlight`` draws it), one-line summary, typed
one-line errors, outputs never replace inputs. PDFs are generated with PyMuPDF in ``tmp_path``."""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grounded.cli.ground import read_chunk_texts
from grounded.cli.main import main
from grounded.parsers import get_parser
from grounded.serialization import read_chunks_jsonl, save_parsing_result
from grounded.text.stream import document_text
from tests.support.pdf_builders import paragraph_pages_pdf

PARAS = [
    "Stimulation of the receptor changes lipid uptake in cultured macrophages of the mouse.",
    "A second paragraph reports the measured concentrations over three weeks of treatment.",
    "The third paragraph, on the next page, discusses the limits of the chosen method.",
]
UNRELATED = "Opera tickets, sourdough starters and football fixtures have nothing to do with this."


@pytest.fixture(scope="module")
def pdf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ground") / "doc.pdf"
    filler = [
        "Further notes list the suppliers of the reagents and the storage temperature of each sample.",
        "The appendix repeats none of the above and closes the report with acknowledgements to staff.",
    ]
    return paragraph_pages_pdf(path, [[(PARAS[0], 100), (PARAS[1], 320)], [(PARAS[2], 180), (filler[0], 400), (filler[1], 560)]])


def summary(capsys: pytest.CaptureFixture[str]) -> str:
    return capsys.readouterr().out.strip()


def test_txt_with_separator_lines_and_highlight_round_trip(pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunks = tmp_path / "chunks.txt"
    # the second chunk spans the page break and has different line breaks than the PDF
    chunks.write_text(f"{PARAS[0]}\n---\n{PARAS[1]}\n\n{PARAS[2].replace(' ', chr(10), 3)}\n  ---  \n{UNRELATED}\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["ground", str(pdf), str(chunks), "-o", str(out)]) == 0
    line = summary(capsys)
    assert line == f"doc.pdf: 3 chunks: 2 grounded (2 exact, 0 fuzzy), 0 partial, 1 refused -> {out}"
    result = read_chunks_jsonl(out)
    assert result.metadata["grounding"] == {"exact": 2, "fuzzy": 0, "partial": 0, "furniture": 0, "refused": 1}
    a, b, refused = result.chunks
    assert a.content == PARAS[0] and a.metadata["grounding_status"] == "exact" and {x.page for x in a.geom} == {1}
    assert b.metadata["pages"] == [1, 2] and {x.page for x in b.geom} == {1, 2}
    root = get_parser("pymupdf").parse(pdf)
    text = document_text(root).text
    assert text[a.metadata["start_char"] : a.metadata["end_char"]] == PARAS[0]
    assert refused.geom == [] and refused.metadata["grounding_status"] == "refused" and refused.metadata["grounding_reason"]
    assert len({c.id for c in result.chunks}) == 3
    # grounded highlight draws the grounded chunks of the file
    drawn = tmp_path / "drawn.pdf"
    assert main(["highlight", str(pdf), str(out), "-o", str(drawn), "-c", a.id, b.id]) == 0
    with pymupdf.open(drawn) as doc:
        assert sum(len(list(page.annots())) for page in doc) >= 3


def test_blank_line_paragraphs_jsonl_and_parsed_tree_input(pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    txt = tmp_path / "paras.txt"
    txt.write_text("\n\n".join(PARAS) + "\n", encoding="utf-8")
    assert read_chunk_texts(txt) == PARAS
    jsonl = tmp_path / "chunks.jsonl"
    jsonl.write_text("\n".join(json.dumps({"text": t, "id": i}) for i, t in enumerate(PARAS)) + "\n\n", encoding="utf-8")
    assert read_chunk_texts(jsonl) == PARAS
    tree = tmp_path / "doc.json"
    save_parsing_result(get_parser("pymupdf").parse(pdf), tree)
    out = tmp_path / "from_tree.json"
    assert main(["ground", str(tree), str(jsonl), "-o", str(out)]) == 0
    assert summary(capsys).startswith("doc.json: 3 chunks: 3 grounded (3 exact, 0 fuzzy), 0 partial, 0 refused")
    assert main(["ground", str(pdf), str(txt)]) == 0  # no -o: the summary only
    assert summary(capsys) == "doc.pdf: 3 chunks: 3 grounded (3 exact, 0 fuzzy), 0 partial, 0 refused"


def test_min_score_refuses_weak_alignments(pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edited = PARAS[1].replace("measured", "observed").replace("three", "four")  # a light LLM edit
    chunks = tmp_path / "edited.txt"
    chunks.write_text(edited, encoding="utf-8")
    assert main(["ground", str(pdf), str(chunks)]) == 0
    assert summary(capsys).endswith(", 0 refused")  # grounded (fuzzy or partial: two words differ)
    assert main(["ground", str(pdf), str(chunks), "--min-score", "0.99"]) == 0
    assert summary(capsys).endswith("0 partial, 1 refused")


@pytest.mark.parametrize(
    ("content", "suffix", "message"),
    [
        ("", ".txt", "no chunks in the file"),
        ("\n---\n\n---\n", ".txt", "no chunks in the file"),
        ('{"text": "ok text here"}\nnot json\n', ".jsonl", "line 2: not valid JSON"),
        ('{"body": "no text field"}\n', ".jsonl", "line 1: expected an object with a string 'text' field"),
    ],
)
def test_bad_chunk_files_are_one_line_errors(
    pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, suffix: str, message: str
) -> None:
    chunks = tmp_path / f"bad{suffix}"
    chunks.write_text(content, encoding="utf-8")
    assert main(["ground", str(pdf), str(chunks)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("grounded ground: error: ") and message in err and str(chunks) in err and err.count("\n") == 1


def test_inputs_are_checked_and_never_overwritten(pdf: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    chunks = tmp_path / "c.txt"
    chunks.write_text(PARAS[0], encoding="utf-8")
    before = chunks.read_bytes()
    assert main(["ground", str(pdf), str(chunks), "-o", str(chunks)]) == 1
    assert "refusing to overwrite" in capsys.readouterr().err and chunks.read_bytes() == before
    assert main(["ground", str(tmp_path / "missing.pdf"), str(chunks)]) == 1
    assert "no such file" in capsys.readouterr().err
    assert main(["ground", str(pdf), str(tmp_path / "missing.txt")]) == 1
    assert "missing.txt: no such file" in capsys.readouterr().err
    latin = tmp_path / "latin.txt"
    latin.write_bytes("caf\xe9 au lait".encode("latin-1"))
    assert main(["ground", str(pdf), str(latin)]) == 1
    assert "not UTF-8" in capsys.readouterr().err
    tree = tmp_path / "t.json"
    save_parsing_result(get_parser("pymupdf").parse(pdf), tree)
    assert main(["ground", str(tree), str(chunks), "--parser", "pymupdf"]) == 1
    assert "PDF input only" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["ground", str(pdf), str(chunks), "--min-score", "0"])
    assert exc.value.code == 2


_LINE = st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), min_size=1, max_size=30).filter(
    lambda s: s.strip() and s.strip() != "---"
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunks=st.lists(st.lists(_LINE, min_size=1, max_size=3).map("\n".join), min_size=1, max_size=6))
def test_separator_files_read_back_the_chunks_written(tmp_path: Path, chunks: list[str]) -> None:
    """Any chunks (lines that are not '---') joined by '---' lines read back as written (minus
    surrounding blank lines); the same file as .jsonl gives the same texts."""
    txt = tmp_path / "c.txt"
    txt.write_text("\n---\n".join(chunks) + ("\n---\n" if len(chunks) == 1 else "\n"), encoding="utf-8")
    expected = [c.strip("\n") for c in chunks if c.strip()]
    assert read_chunk_texts(txt) == expected
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps({"text": c}) for c in chunks), encoding="utf-8")
    assert read_chunk_texts(jsonl) == [c for c in chunks if c.strip()]


def test_page_furniture_in_the_summary_and_the_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A running footer the parser drops: a chunk made of it alone is 'page furniture only' (boxes in
    ``grounding_furniture_boxes``, no offsets); a body chunk that includes it keeps its tree span."""
    footer = "Proceedings of the Example Society, volume 7, printed on recycled paper"
    path = tmp_path / "furn.pdf"
    doc = pymupdf.open()
    for i in range(2):
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 100, 520, 300), PARAS[i] + " " + PARAS[2], fontsize=11)
        page.insert_text((72, 815), footer, fontsize=7)
    doc.save(path)
    chunks = tmp_path / "chunks.txt"
    chunks.write_text(f"{PARAS[0]} {PARAS[2]}\n{footer}\n---\n{footer}\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    assert main(["ground", str(path), str(chunks), "-o", str(out)]) == 0
    assert summary(capsys) == f"furn.pdf: 2 chunks: 1 grounded (0 exact, 1 fuzzy), 0 partial, 1 page furniture only, 0 refused -> {out}"
    body, only = read_chunks_jsonl(out).chunks
    assert body.metadata["grounding_status"] == "fuzzy" and body.geom and body.metadata["start_char"] == 0
    assert "outside the parse tree" in body.metadata["grounding_reason"]
    assert [row[0] for row in body.metadata["grounding_furniture_boxes"]] == [1]
    assert only.metadata["grounding_status"] == "furniture" and not only.geom and "start_char" not in only.metadata
    (page, left, top, right, bottom), = only.metadata["grounding_furniture_boxes"]
    assert page in (1, 2) and top > 0.9 and 0 < left < right < 1
