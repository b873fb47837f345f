"""The sample guideline PDF (public path; the code lives in :mod:`grounded.demo.samples`).

Command line: ``python -m grounded.samples OUT.pdf``.
"""

from __future__ import annotations

from .demo.samples import SAMPLE_TITLE, main, sample_pdf_bytes, write_sample_pdf

__all__ = ["write_sample_pdf", "sample_pdf_bytes", "SAMPLE_TITLE"]

if __name__ == "__main__":
    raise SystemExit(main())
