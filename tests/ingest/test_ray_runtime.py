"""The local Ray runtime leaves nothing behind (issue 21.10): a driver killed with SIGKILL takes its
runtime's processes and folder with it (the watchdog of :mod:`grounded.ingest.ray_runtime`)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from grounded.ingest import ray_runtime

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="the watchdog reads /proc (Linux)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _wait_gone(check, timeout: float = 30.0) -> bool:  # type: ignore[no-untyped-def]
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.2)
    return False


DRIVER = '''
import os, subprocess, sys, time
from grounded.ingest import ray_runtime
from grounded.io.atomic import make_temp_dir
scratch = make_temp_dir(ray_runtime.TEMP_PREFIX)
token = "t" + str(os.getpid())
os.environ[ray_runtime.MARKER_ENV] = token
watchdog = ray_runtime._start_watchdog(token, scratch.name)
os.environ.pop(ray_runtime.MARKER_ENV)
# a stand-in for Ray's processes: a grandchild in its own session, carrying the marker
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True,
                         env={**os.environ, ray_runtime.MARKER_ENV: token})
print(scratch.name, child.pid, watchdog.pid, flush=True)
time.sleep(600)
'''


def test_kill_9_of_the_driver_kills_the_marked_processes_and_removes_the_folder() -> None:
    driver = subprocess.Popen([sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, text=True, env=os.environ)
    assert driver.stdout is not None
    folder, child, watchdog = driver.stdout.readline().split()
    child_pid, watchdog_pid = int(child), int(watchdog)
    assert Path(folder).is_dir() and _alive(child_pid) and _alive(watchdog_pid)
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait()
    assert _wait_gone(lambda: not _alive(child_pid)), "the marked process survived the driver"
    assert _wait_gone(lambda: not Path(folder).exists())
    assert _wait_gone(lambda: not _alive(watchdog_pid))


def test_kill_marked_spares_unmarked_processes() -> None:
    token = f"spare{os.getpid()}"
    marked = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                              env={**os.environ, ray_runtime.MARKER_ENV: token})
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                             env={**os.environ, ray_runtime.MARKER_ENV: token + "x"})
    try:
        time.sleep(0.5)
        assert ray_runtime.kill_marked(token) >= 1
        assert marked.wait(timeout=10) == -signal.SIGKILL
        assert other.poll() is None
    finally:
        other.kill()
        other.wait()
        marked.kill()
        marked.wait()


def test_kill_marked_kills_the_processes_that_use_the_run_folder(tmp_path: Path) -> None:
    """Ray's DashboardAgent and RuntimeEnvAgent overwrite their environment (and the marker in it)
    with their process title: a process holding a file of the run's folder open is the run's."""
    folder = tmp_path / "grounded-ray-run"
    folder.mkdir()
    log = folder / "agent.log"
    agent = subprocess.Popen([sys.executable, "-c", f"f = open({str(log)!r}, 'w'); import time; time.sleep(600)"])
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], cwd=tmp_path)
    try:
        assert _wait_gone(log.exists, 30)
        time.sleep(0.3)
        assert ray_runtime.kill_marked("no-such-token") == 0  # unmarked, and no folder given
        assert ray_runtime.kill_marked("no-such-token", str(folder)) == 1
        assert agent.wait(timeout=10) == -signal.SIGKILL
        assert bystander.poll() is None
    finally:
        for proc in (agent, bystander):
            proc.kill()
            proc.wait()


def test_prepare_environment_keeps_the_users_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAY_USAGE_STATS_ENABLED", "1")
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", raising=False)
    ray_runtime.prepare_environment()
    assert os.environ["RAY_USAGE_STATS_ENABLED"] == "1"
    assert os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"


def _in_ray_folder(pid: str) -> bool:
    """The process holds a file of a grounded Ray run's folder open (the agents, whose process
    title overwrites their environment)."""
    try:
        links = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
    except OSError:
        return False
    prefix = os.path.join(tempfile.gettempdir(), ray_runtime.TEMP_PREFIX)
    return any(link.startswith(prefix) for link in links)


def _ray_processes() -> dict[int, str]:
    """Processes of any grounded Ray run: pid -> command line."""
    found = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = Path(entry.path, "environ").read_bytes()
            cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if (f"{ray_runtime.MARKER_ENV}=".encode() in env or _in_ray_folder(entry.name)) and _alive(int(entry.name)):
            found[int(entry.name)] = cmd
    return found


@pytest.mark.slow
def test_kill_9_of_an_ingest_driver_leaves_no_ray_process(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    import pymupdf

    inputs = tmp_path / "in"
    inputs.mkdir()
    for i in range(3):
        doc = pymupdf.open()
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 520, 700), f"Document {i}: trastuzumab dosing guidance. " * 20, fontsize=11)
        doc.save(inputs / f"d{i}.pdf")
        doc.close()
    before = set(_ray_processes())
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    driver = subprocess.Popen(
        [sys.executable, "-m", "grounded.cli", "ingest", str(inputs), "-o", str(tmp_path / "out"), "--engine", "ray",
         "--no-progress"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        assert _wait_gone(lambda: any("ray::" in c for p, c in _ray_processes().items() if p not in before), 240), \
            "no ray:: process appeared"
        assert _wait_gone(lambda: any("Agent" in c for p, c in _ray_processes().items() if p not in before), 60), \
            "the agents were not found"
        ours = {p: c for p, c in _ray_processes().items() if p not in before}
    finally:
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
    assert _wait_gone(lambda: not [p for p in ours if _alive(p)], 60), \
        {p: ours[p] for p in ours if _alive(p)}
    assert _wait_gone(lambda: not list(Path(tempfile.gettempdir()).glob(f"{ray_runtime.TEMP_PREFIX}{driver.pid}-*")), 30)


def test_the_ray_actor_sends_back_every_field_of_a_document_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """A field added to DocResult (embed_cut, ...) must travel from the actor to the driver: the
    actor's columns are the record's fields (no Ray runtime needed: the actor's call is plain code)."""
    import dataclasses

    from grounded.ingest import ray_engine
    from grounded.ingest.worker import DocResult

    done = DocResult("done", "a.pdf", "0" * 64, pages=2, chunks=5, seconds={"parse": 1.5}, embed_cut=3)
    monkeypatch.setattr(ray_engine, "process_document", lambda path, sha: done)
    actor = object.__new__(ray_engine._DocumentActor)  # no setup: the call is what is checked
    out = actor({"path": ["a.pdf"], "sha256": ["0" * 64]})
    assert set(out) == {f.name for f in dataclasses.fields(DocResult)}
    row = {k: v[0] for k, v in out.items()}
    assert row["embed_cut"] == 3 and row["table"] == b"" and row["chunks"] == 5


#: a ``sitecustomize`` for the Ray worker processes of one test: ``process_document`` of a path that
#: contains $GROUNDED_TEST_CRASH_ON kills its process, as a crash in native code would
_CRASHER = '''
import importlib.abc, importlib.machinery, os, sys
_MARK = os.environ.get("GROUNDED_TEST_CRASH_ON")


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "grounded.ingest.worker":
            return None
        sys.meta_path.remove(self)
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            real = module.process_document

            def process_document(path, sha256):
                if _MARK in path:
                    os._exit(3)
                return real(path, sha256)

            module.process_document = process_document

        spec.loader.exec_module = exec_module
        return spec


if _MARK:
    sys.meta_path.insert(0, _Finder())
'''


@pytest.mark.slow
def test_a_document_that_kills_its_ray_actor_is_its_error_and_the_run_goes_on(tmp_path: Path) -> None:
    """Ray Data retries a task whose actor died without limit: a PDF that crashed its parser hung
    the run. Now: retried once on a restarted actor, then a WorkerCrashError row; the rest is done."""
    pytest.importorskip("ray")
    import pyarrow.parquet as pq

    from tests.support.ingest_corpus import make_pdf

    inputs = tmp_path / "in"
    for name in ("a.pdf", "crash-me.pdf", "b.pdf"):
        make_pdf(inputs / name, 1, len(name))
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_CRASHER, encoding="utf-8")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "GROUNDED_TEST_CRASH_ON": "crash-me",
           "PYTHONPATH": os.pathsep.join([str(hook), *filter(None, [os.environ.get("PYTHONPATH")])])}
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "grounded.cli", "ingest", str(inputs), "-o", str(out), "--engine", "ray", "--workers", "2",
         "--no-progress"], env=env, capture_output=True, text=True, timeout=420,
    )
    assert done.returncode == 1, done.stderr  # one input failed
    errors = pq.read_table(out / "errors.parquet").to_pylist()
    assert [(Path(e["path"]).name, e["error_type"]) for e in errors] == [("crash-me.pdf", "WorkerCrashError")]
    assert "the Ray actor died while handling this file, 2 times" in errors[0]["message"]
    assert len(list((out / "chunks").glob("part-*.parquet"))) == 2
    assert "Traceback" not in done.stderr
