"""The CLI under adversarial use: one-line typed errors (never a traceback), warnings as one line,
batches that go on after any per-file failure, outputs that never replace an input, chunks that
are only drawn on the PDF they came from, damaged PDFs that MuPDF cannot write, passwords."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import warnings
from pathlib import Path

import pymupdf
import pytest

from grounded.attribution import highlight
from grounded.attribution.highlight import PDFRepairWarning
from grounded.chunking.chunker import Chunker
from grounded.cli.main import main, warnings_as_lines
from grounded.errors import CorruptPDFError, GroundedError
from grounded.model import Chunk, ChunkingResult, ParsingBoundingBox
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.serialization import load_chunking_result, save_parsing_result, write_chunks_jsonl
from tests.support.data import shared
from tests.support.pdf_builders import add_scanned_page, save_pdf

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture(scope="module")
def pdf() -> Path:
    return shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")


@pytest.fixture(scope="module")
def made(pdf, tmp_path_factory) -> dict[str, Path]:
    """The PDF's parse tree and chunks (.jsonl), made once."""
    folder = tmp_path_factory.mktemp("made")
    root = PyMuPDFParser().parse(pdf)
    return {
        "tree": save_parsing_result(root, folder / "tree.json"),
        "chunks": write_chunks_jsonl(Chunker("recursive", 128).chunk(root), folder / "chunks.jsonl"),
    }


def _cli(capsys, *args: str) -> tuple[int, list[str], str]:
    """(exit code, stderr lines, stdout) of ``grounded ARGS`` in-process."""
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, [ln for ln in out.err.splitlines() if ln.strip()], out.out


def _text_pdf(path: Path, text: str = "Dose 5 mg once daily for adults with normal renal function.", pages: int = 1) -> Path:
    """Pages of plain running text (three paragraphs each, mid-page)."""
    doc = pymupdf.open()
    for i in range(pages):
        body = (f"Section {i + 1}. " + f"{text} " * 6 + "\n\n") * 3
        doc.new_page().insert_textbox(pymupdf.Rect(72, 200, 520, 700), body, fontsize=11)
    doc.save(path)
    return path


# -- warnings ---------------------------------------------------------------------------------------
def test_warnings_become_one_line_each(capsys):
    with warnings_as_lines("parse"):
        warnings.warn("first line\nsecond line", UserWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert err == "grounded parse: warning: first line second line\n"


def test_parse_prints_library_warnings_as_lines(tmp_path, capsys):
    """A page without a text layer (NoTextLayerWarning) beside a text page: one warning line."""
    src = _text_pdf(tmp_path / "src.pdf", pages=2)
    doc = pymupdf.open(src)
    add_scanned_page(doc, doc[1], dpi=72)
    doc.delete_page(1)
    mixed = tmp_path / "mixed.pdf"
    doc.save(mixed)
    code, err, _ = _cli(capsys, "parse", mixed, "-o", tmp_path / "out", "--ocr", "never", "--no-progress")
    assert code == 0
    assert err and all(ln.startswith("grounded parse: warning: ") for ln in err), err
    assert any("text layer" in ln and "mixed.pdf" in ln for ln in err)


# -- chunk ------------------------------------------------------------------------------------------
def test_chunk_unknown_parser_is_one_usage_line(pdf):
    proc = subprocess.run([sys.executable, "-m", "grounded.cli", "chunk", str(pdf), "--parser", "nope"],
                          capture_output=True, text=True, env=ENV, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("grounded chunk: error: argument --parser: unknown parser 'nope'; choose one of: ")
    assert "pymupdf" in lines[0] and "docling" in lines[0]  # the known names, listed by the one registry


@pytest.mark.parametrize("options", [["--parser", "pymupdf"], ["--password", "x"], ["--parser", "docling", "--password", "x"]])
def test_chunk_refuses_parse_options_for_a_tree(options, made, capsys):
    code, err, _ = _cli(capsys, "chunk", made["tree"], *options)
    assert code == 1 and len(err) == 1
    assert "to PDF input only" in err[0] and str(made["tree"]) in err[0]
    for opt in options[::2]:
        assert opt in err[0]


def test_chunk_never_overwrites_its_input(made, tmp_path, capsys):
    tree = tmp_path / "x.json"
    tree.write_bytes(made["tree"].read_bytes())
    before = tree.read_bytes()
    link = tmp_path / "link.json"
    os.link(tree, link)  # the same file under another name
    for target in (tree, link, tmp_path / "sub" / ".." / "x.json"):
        code, err, _ = _cli(capsys, "chunk", tree, "-o", target)
        assert code == 1 and len(err) == 1 and "refusing to overwrite the input file" in err[0]
    assert tree.read_bytes() == before
    code, _, out = _cli(capsys, "chunk", tree, "-o", tmp_path / "x.jsonl")
    assert code == 0 and load_chunking_result(tmp_path / "x.jsonl").chunks


def test_chunk_takes_a_pdf_by_content_whatever_its_name(tmp_path, capsys):
    odd = _text_pdf(tmp_path / "report.json")
    code, err, out = _cli(capsys, "chunk", odd, "-n", "32")
    assert code == 0 and "report.json: " in out and "1 pages covered" in out


# -- highlight ----------------------------------------------------------------------------------------
def test_highlight_refuses_another_pdf_unless_forced(made, tmp_path, capsys):
    chunk_id = load_chunking_result(made["chunks"]).chunks[0].id
    other = _text_pdf(tmp_path / "other.pdf")
    code, err, _ = _cli(capsys, "highlight", other, made["chunks"], "--chunk", chunk_id, "-o", tmp_path / "o.pdf")
    assert code == 1 and len(err) == 1 and not (tmp_path / "o.pdf").exists()
    assert err[0].startswith(f"grounded highlight: error: {other}: not the PDF the chunks in {made['chunks']} were made from")
    assert "--force" in err[0] and "2305.03393v1-pg9.pdf" in err[0]
    code, err, _ = _cli(capsys, "highlight", other, made["chunks"], "--chunk", chunk_id, "-o", tmp_path / "o.pdf", "--force")
    assert code == 0 and (tmp_path / "o.pdf").exists()


def test_highlight_never_overwrites_its_inputs(pdf, made, tmp_path, capsys):
    mine = tmp_path / "x.pdf"
    mine.write_bytes(pdf.read_bytes())
    chunks = tmp_path / "chunks.jsonl"
    chunks.write_bytes(made["chunks"].read_bytes())
    code, err, _ = _cli(capsys, "highlight", mine, chunks, "-o", mine)
    assert code == 1 and len(err) == 1 and "refusing to overwrite the input file" in err[0]
    assert mine.read_bytes() == pdf.read_bytes()
    # a PNG page image that would land on the input PDF (named like the first page image: OUT.png)
    page_named = tmp_path / "o.png"
    page_named.write_bytes(pdf.read_bytes())
    code, err, _ = _cli(capsys, "highlight", page_named, chunks, "-o", tmp_path / "o.png")
    assert code == 1 and "refusing to overwrite the input file" in err[0]
    assert page_named.read_bytes() == pdf.read_bytes()


def _unused_broken_object_pdf(path: Path) -> Path:
    """A PDF whose pages are fine but which holds an unused object MuPDF cannot write back."""
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "Dose 5 mg once daily", fontsize=12)
    xref = doc.get_new_xref()
    doc.update_object(xref, "<< /Zzzzz 1 >>")
    data = doc.tobytes(deflate=False, garbage=0, use_objstms=0)
    assert data.count(b"/Zzzzz") == 1
    path.write_bytes(data.replace(b"/Zzzzz", b"77777"))  # a number where a name key must be
    return path


def _chunk_on_page_one(text: str = "Dose 5 mg once daily") -> ChunkingResult:
    box = ParsingBoundingBox(1, 0.1, 0.07, 0.5, 0.1, mode="line", element_id="e1")
    return ChunkingResult([Chunk("c1", text, {"pages": [1], "heading_path": []}, [box])])


def test_damaged_object_no_page_uses_is_left_out_with_a_warning(tmp_path, capsys):
    broken = _unused_broken_object_pdf(tmp_path / "broken.pdf")
    with pytest.raises(Exception) as plain:  # what MuPDF does with it on its own
        pymupdf.open(broken).tobytes(deflate=True)
    assert not isinstance(plain.value, GroundedError)
    with pytest.warns(PDFRepairWarning, match=r"broken\.pdf: damaged PDF: broken objects that no page uses"):
        out = highlight(broken, _chunk_on_page_one(), tmp_path / "h.pdf")
    annots = [a.type[1] for a in pymupdf.open(out)[0].annots()]
    assert "Highlight" in annots
    chunks = write_chunks_jsonl(_chunk_on_page_one(), tmp_path / "c.jsonl")
    code, err, _ = _cli(capsys, "highlight", broken, chunks, "-o", tmp_path / "h2.pdf")
    assert code == 0 and len(err) == 1 and err[0].startswith("grounded highlight: warning: ")


def test_byte_flipped_pdfs_highlight_or_fail_typed(pdf, made, tmp_path):
    """Seeded byte flips of a real PDF: highlight and render either work or raise a typed error."""
    from grounded.attribution import render

    chunks = load_chunking_result(made["chunks"]).chunks
    data = pdf.read_bytes()
    rng = random.Random(9)
    outcomes: dict[str, int] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i in range(40):
            mutant = bytearray(data)
            for _ in range(1 + i % 3):
                mutant[rng.randrange(len(mutant))] ^= 1 << rng.randrange(8)
            for action in ("highlight", "render") if i % 4 == 0 else ("highlight",):
                try:
                    if action == "highlight":
                        highlight(bytes(mutant), chunks)
                    else:
                        render(bytes(mutant), chunks[0], dpi=20)
                    outcomes["ok"] = outcomes.get("ok", 0) + 1
                except GroundedError as exc:
                    outcomes[type(exc).__name__] = outcomes.get(type(exc).__name__, 0) + 1
    assert sum(outcomes.values()) == 50 and outcomes.get("ok", 0) > 25, outcomes


def test_mupdf_failures_while_drawing_are_corrupt_pdf_errors(tmp_path):
    """MuPDF's own exception types never escape: a page object that is not a page."""
    from grounded.attribution.geometry import mupdf_errors

    expected = r"^x\.pdf: damaged PDF: MuPDF failed while drawing on page 2 \(code=8: invalid key in dict\)$"
    with pytest.raises(CorruptPDFError, match=expected), mupdf_errors("x.pdf", "drawing on page 2"):
        raise pymupdf.mupdf.FzErrorSyntax("invalid key\nin dict")
    with pytest.raises(RecursionError), mupdf_errors("x.pdf", "drawing"):  # not MuPDF's
        raise RecursionError("deep")


def test_encrypted_pdf_needs_its_password_and_stays_encrypted(pdf, made, tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked.pdf"
    save_pdf(pymupdf.open(pdf), locked, user_pw="s3cret", owner_pw="owner")
    chunk_id = load_chunking_result(made["chunks"]).chunks[0].id
    args = ["highlight", locked, made["chunks"], "--chunk", chunk_id, "--force", "-o"]
    code, err, _ = _cli(capsys, *args, tmp_path / "a.pdf")
    assert code == 1 and "a password is needed" in err[0] and "--password" in err[0]
    code, err, _ = _cli(capsys, *args, tmp_path / "b.pdf", "--password", "wrong")
    assert code == 1 and "the password given does not open it" in err[0]
    code, err, _ = _cli(capsys, *args, tmp_path / "c.pdf", "--password", "s3cret")
    assert code == 0, err
    copy = pymupdf.open(tmp_path / "c.pdf")
    assert copy.needs_pass and copy.authenticate("s3cret")
    assert [a.type[1] for a in copy[0].annots()].count("Highlight") >= 1
    code, err, _ = _cli(capsys, *args, tmp_path / "d.png", "--password", "s3cret", "--dpi", "30")
    assert code == 0 and (tmp_path / "d.png").exists()
    monkeypatch.setenv("GROUNDED_PDF_PASSWORD", "s3cret")  # kept out of the process list
    code, err, _ = _cli(capsys, *args, tmp_path / "e.pdf")
    assert code == 0 and pymupdf.open(tmp_path / "e.pdf").needs_pass
    code, err, _ = _cli(capsys, "chunk", made["tree"], "-n", "64")  # the environment is no explicit option
    assert code == 0, err


def test_parse_and_chunk_pass_the_password(pdf, tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked.pdf"
    save_pdf(pymupdf.open(pdf), locked, user_pw="s3cret", owner_pw="owner")
    code, err, _ = _cli(capsys, "parse", locked, "-o", tmp_path / "out", "--no-progress")
    assert code == 1 and len(err) == 1 and "password" in err[0]
    code, err, out = _cli(capsys, "parse", locked, "-o", tmp_path / "out", "--no-progress", "--password", "s3cret")
    assert code == 0 and (tmp_path / "out" / "locked.json").exists(), err
    code, err, out = _cli(capsys, "chunk", locked, "--password", "s3cret", "-n", "64")
    assert code == 0 and "locked.pdf:" in out
    code, err, out = _cli(capsys, "chunk", locked, "--password", "wrong")
    assert code == 1 and len(err) == 1 and str(locked) in err[0]
    monkeypatch.setenv("GROUNDED_PDF_PASSWORD", "s3cret")
    code, err, out = _cli(capsys, "parse", locked, "-o", tmp_path / "env", "--no-progress")
    assert code == 0 and (tmp_path / "env" / "locked.md").exists(), err


# -- parse batches ------------------------------------------------------------------------------------
def test_batch_goes_on_after_input_and_output_failures(pdf, tmp_path, capsys):
    folder = tmp_path / "in"
    (folder / "a").mkdir(parents=True)
    (folder / "b").mkdir()
    long_name = folder / ("L" * 251 + ".pdf")  # fits, but L*251 + ".json" does not
    long_name.write_bytes(pdf.read_bytes())
    bad = folder / "bad.pdf"
    bad.write_text("not a pdf")
    first, second = folder / "a" / "x.pdf", folder / "b" / "x.pdf"
    first.write_bytes(pdf.read_bytes())
    _text_pdf(second)
    out = tmp_path / "out"
    code, err, stdout = _cli(capsys, "parse", long_name, bad, first, second, "-o", out, "--no-progress")
    assert code == 1
    assert sorted(p.name for p in out.iterdir()) == ["x-2.json", "x-2.md", "x.json", "x.md"]
    assert "Dose 5 mg" in (out / "x-2.md").read_text() and "Dose 5 mg" not in (out / "x.md").read_text()
    assert any(ln.startswith("grounded parse: error: ") and "file name too long" in ln and "L" * 251 in ln for ln in err)
    assert any(ln.startswith(f"grounded parse: error: {bad}: not a PDF") for ln in err)
    assert any(ln.startswith(f"grounded parse: note: {second} -> x-2.json, x-2.md") for ln in err)
    assert err[-1].startswith("grounded parse: error: 2 of 4 file(s) failed: ") and str(bad) in err[-1]
    assert f"{first} -> {out / 'x.json'}" in stdout and f"{second} -> {out / 'x-2.json'}" in stdout


def test_parse_never_replaces_its_input(pdf, tmp_path, capsys):
    """A PDF named paper.md: its Markdown output would land on it."""
    odd = tmp_path / "paper.md"
    odd.write_bytes(pdf.read_bytes())
    code, err, _ = _cli(capsys, "parse", odd, "-o", tmp_path, "--no-progress")
    assert code == 1 and len(err) == 1
    assert err[0] == (f"grounded parse: error: {tmp_path / 'paper.md'}: refusing to overwrite the input file {odd}; "
                      "choose another output name")
    assert odd.read_bytes() == pdf.read_bytes() and not (tmp_path / "paper.json").exists()


def test_unwritable_outputs_are_one_line_errors_naming_the_file(pdf, made, tmp_path, capsys):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    long_jsonl = tmp_path / ("z" * 300 + ".jsonl")
    for target, cause in ((blocker / "sub" / "c.jsonl", f"{blocker} is a file, not a folder"),
                          (long_jsonl, "file name too long (306 bytes; the limit is 255): choose a shorter name")):
        code, err, _ = _cli(capsys, "chunk", made["tree"], "-o", target)
        assert code == 1 and err == [f"grounded chunk: error: {target}: {cause}"]
    png = tmp_path / ("p" * 252 + ".png")  # 256 bytes: too long
    code, err, _ = _cli(capsys, "highlight", pdf, made["chunks"], "-o", png)
    assert code == 1 and len(err) == 1 and "file name too long" in err[0] and str(png) in err[0]
    assert list(tmp_path.iterdir()) == [blocker]
    code, err, _ = _cli(capsys, "parse", pdf, "--workers", "0", "-o", tmp_path / "out")
    assert code == 1 and err == ["grounded parse: error: --workers must be >= 1"]
