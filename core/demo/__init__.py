"""The demo: a generated sample guideline (:mod:`.samples`, typeset by :mod:`.typeset`); the
``grounded demo`` job that parses, chunks and highlights it is :mod:`grounded.cli.demo`."""

from __future__ import annotations

from .samples import SAMPLE_TITLE, sample_pdf_bytes, write_sample_pdf

__all__ = ["write_sample_pdf", "sample_pdf_bytes", "SAMPLE_TITLE"]
