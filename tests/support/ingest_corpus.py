"""The generated corpus of the ``grounded ingest`` tests (tests/ingest/test_ingest*.py): text PDFs
made from a seed, a truncated and an encrypted PDF, and readers of an output folder's rows."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pyarrow.parquet as pq

__all__ = ["ENV", "WORDS", "make_bad", "make_pdf", "parts", "sha256"]

#: the environment of the ``grounded`` subprocesses these tests start (offline, quiet tokenizers)
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}

WORDS = ["guideline", "patients", "treatment", "dose", "renal", "hepatic", "monitoring", "therapy", "evidence", "recommendation", "trial", "outcome", "adverse", "event", "clinical", "review", "cohort", "baseline", "follow-up", "analysis", "protocol"]


def make_pdf(path: Path, pages: int, seed: int) -> Path:
    """A text PDF: a title, then per page a section header and three paragraphs."""
    import pymupdf  # imported after grounded (which sets the ONNX Runtime offline defaults first)

    doc = pymupdf.open()
    for p in range(pages):
        page = doc.new_page()
        y = 72
        if p == 0:
            page.insert_text((72, y), f"Document {seed} clinical guideline", fontsize=18)
            y += 36
        page.insert_text((72, y), f"{p + 1}. Section {seed}.{p + 1}", fontsize=13)
        y += 24
        for k in range(3):
            words = [WORDS[(seed * 7 + p * 5 + k * 3 + i) % len(WORDS)] for i in range(70)]
            text = " ".join(words).capitalize() + "."
            rect = pymupdf.Rect(72, y, 523, y + 150)
            page.insert_textbox(rect, text, fontsize=10)
            y += 160
    path.parent.mkdir(parents=True, exist_ok=True)
    doc.save(path)
    doc.close()
    return path


def make_bad(folder: Path) -> tuple[Path, Path]:
    """A truncated PDF (header and a few bytes of a body, no objects) and a password-protected one."""
    import pymupdf

    folder.mkdir(parents=True, exist_ok=True)
    good = make_pdf(folder / "_source.tmp", 2, 99).read_bytes()
    (folder / "_source.tmp").unlink()
    corrupt = folder / "truncated.pdf"
    corrupt.write_bytes(good[:400])
    encrypted = folder / "encrypted.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret text " * 20)
    doc.save(encrypted, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="user", owner_pw="owner")
    doc.close()
    return corrupt, encrypted


def parts(out: Path) -> dict[str, list[dict]]:
    """The rows of each part file of an ingest output folder, by part file name."""
    return {p.name: pq.read_table(p).to_pylist() for p in sorted((out / "chunks").glob("part-*.parquet"))}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
