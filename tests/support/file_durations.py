"""Pytest plugin: the time each test file took, the longest first, in the terminal summary - the
numbers behind the xdist schedule of ``scripts/test.sh`` (with ``--dist loadfile`` a file runs on
one worker, so the longest file bounds the wall time). Load it with
``-p tests.support.file_durations``.

Two numbers per file: wall seconds (setup + call + teardown of its tests, summed) and CPU seconds
(user + system of the test process and of the child processes it waited for, e.g. ingest workers
and ``subprocess.run``; a child still running or not waited for is not counted). On a shared,
loaded machine the wall time swings with the load; the CPU time measures the work. Under xdist the
CPU is measured in each worker and sent with its reports (``user_properties``); the summary is
written by the controller, which sees every worker's reports."""

from __future__ import annotations

import resource
from collections import defaultdict
from collections.abc import Iterator

import pytest

_wall: dict[str, float] = defaultdict(float)
_cpu: dict[str, float] = defaultdict(float)
_mark: list[float] = []
CPU_KEY = "cpu_seconds"


def _cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    now = _cpu_now()
    report.user_properties.append((CPU_KEY, now - (_mark[0] if _mark else now)))
    _mark[:] = [now]


def pytest_runtest_logstart(nodeid: str, location: tuple[str, int | None, str]) -> None:
    if not _mark:  # the first test of this process: count from here
        _mark.append(_cpu_now())


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    path = report.nodeid.split("::", 1)[0]
    _wall[path] += report.duration
    _cpu[path] += sum(v for k, v in report.user_properties if k == CPU_KEY)


def pytest_terminal_summary(terminalreporter) -> None:  # type: ignore[no-untyped-def]
    if not _wall:
        return
    terminalreporter.write_sep("=", "time per test file: wall s, CPU s")
    for path, seconds in sorted(_wall.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:9.1f} {_cpu[path]:9.1f}  {path}")
    terminalreporter.write_line(f"{sum(_wall.values()):9.1f} {sum(_cpu.values()):9.1f}  total")
