"""Session fixtures. Paths and shared helpers live in :mod:`tests.support` (test modules import from
there, never from each other); real data is read from ``../shared/data``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.data import shared


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared()


@pytest.fixture(scope="session")
def clinsci_pdf() -> Path:
    """13 pages, two columns, 5 tables (the issue's reference document)."""
    return shared("long", "cermine_web_example3_clinsci.pdf")
