"""Work done once per test run and shared by every pytest-xdist worker: a folder all workers of
the run see, and an inter-process lock so one worker builds while the others wait, then reuse.

Under xdist each worker's temp folder is ``<run>/popen-gwN``; :func:`run_directory` is ``<run>``
itself (without xdist, the session's temp folder). The lock is ``fcntl.flock`` (POSIX); where it
is missing, two workers may build the same thing once each, which is only slower."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def run_directory(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """``<the run's temp folder>/<name>``, seen by every worker of this run."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@contextlib.contextmanager
def exclusive(lock: Path) -> Iterator[None]:
    """Hold ``lock`` (a file, created if missing) against the other workers of the run."""
    if fcntl is None:
        yield
        return
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
