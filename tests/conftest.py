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


#: Tests that failed on the integrated tree of session 7 (eight branches merged in its last minutes)
#: and could not be mended before the session ended. Each is a known gap named in the closing note of
#: its issue; non-strict so a fix shows as XPASS. Remove an entry when its cause is fixed.
KNOWN_FAILURES: dict[str, str] = {}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        reason = KNOWN_FAILURES.get(item.nodeid.split("[", 1)[0])
        if reason:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=False))
