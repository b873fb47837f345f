"""An object a framework's process pool pickles for spawned workers refuses an unguarded script
(issue 42 item 8: ``IngestionPipeline(...).run(num_workers=2)`` without ``if __name__ ==
"__main__":`` respawned dying workers for 15 minutes); real pools in real subprocesses."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = """
import multiprocessing

from grounded.runtime.main_guard import check_pickled_for_spawned_pool


class Part:
    def __getstate__(self):
        check_pickled_for_spawned_pool("Part sent to a process pool")
        return {{}}


def work(part):
    return "done"


{body}
"""

RUN = """pool = multiprocessing.get_context("{method}").Pool(2)
try:
    print(pool.map(work, [Part(), Part()]))
finally:
    pool.terminate()"""


def _run(tmp_path: Path, method: str, guarded: bool) -> subprocess.CompletedProcess[str]:
    run = RUN.format(method=method)
    body = 'if __name__ == "__main__":\n' + textwrap.indent(run, "    ") if guarded else run
    script = tmp_path / f"pool_{method}_{guarded}.py"
    script.write_text(SCRIPT.format(body=body))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)


def test_an_unguarded_spawn_pool_fails_at_once_and_says_why(tmp_path: Path) -> None:
    done = _run(tmp_path, "spawn", guarded=False)
    assert done.returncode != 0
    assert "UnguardedMainError" in done.stderr and 'if __name__ == "__main__":' in done.stderr, done.stderr[-2000:]
    assert "Part sent to a process pool" in done.stderr and "pool_spawn_False.py, line" in done.stderr


@pytest.mark.parametrize(("method", "guarded"), [("spawn", True), ("forkserver", True), ("fork", False)])
def test_a_guarded_script_or_a_fork_pool_runs(tmp_path: Path, method: str, guarded: bool) -> None:
    done = _run(tmp_path, method, guarded)
    assert done.returncode == 0 and "['done', 'done']" in done.stdout, done.stderr[-2000:]


def test_pickling_outside_a_pool_passes() -> None:
    """A copy or a cache pickles too; only a spawning pool's pickle is checked."""
    import pickle

    from grounded.runtime.main_guard import check_pickled_for_spawned_pool

    check_pickled_for_spawned_pool("x")  # no pool on this stack: nothing raised
    assert pickle.loads(pickle.dumps([1, 2])) == [1, 2]
