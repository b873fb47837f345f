"""Where the tests find the repository and the shared data (``../shared/data``, never copied in)."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
SHARED_DATA = (REPO / ".." / "shared" / "data").resolve()
LONG_PDFS = sorted((SHARED_DATA / "long").glob("*.pdf"))
DOCLING_GT_PDFS = sorted((SHARED_DATA / "pdfs" / "docling_groundtruth").glob("*.pdf"))
#: the repository's own test data (recorded model answers, labelled cases)
TEST_DATA = REPO / "tests" / "data"


def shared(*parts: str) -> Path:
    """Path under ../shared/data; skips the test when the shared data is not beside the repo."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not available: {path}")
    return path
