"""``grounded view OUT --port 0`` run as a user runs it (a subprocess), for the viewer's browser and
load tests."""

from __future__ import annotations

import select
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.data import REPO
from tests.support.search_index import ENV


@dataclass
class RunningViewer:
    url: str  # http://127.0.0.1:PORT/ as printed on the first line
    proc: subprocess.Popen[str]
    stderr: str = ""  # what the viewer printed on stderr, once it stopped


@contextmanager
def running_viewer(out: Path, *args: str) -> Iterator[RunningViewer]:
    """Start the viewer, yield it once it printed its URL; stop it with Ctrl-C (SIGINT) after, and
    keep its stderr in ``.stderr``."""
    proc = subprocess.Popen([sys.executable, "-m", "grounded.cli", "view", str(out), "--port", "0", *args], cwd=REPO,
                            env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    viewer = RunningViewer("", proc)
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 180)
        line = proc.stdout.readline() if ready else ""
        assert "serving" in line, f"grounded view did not start: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        viewer.url = line.split(" at ", 1)[1].split()[0]
        yield viewer
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, viewer.stderr = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, viewer.stderr = proc.communicate()
