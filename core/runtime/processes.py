"""Worker processes that die with their parent (issue #14.6).

A ``kill -9`` of the main process gives its children no chance to be told to stop: a spawn
pool's workers (and, through the pipe they inherit, multiprocessing's resource tracker) would
live on, each holding its own copy of the layout model. :func:`die_with_parent`, called first
thing in a worker (the pool's initializer), makes the worker exit when the parent goes:

* Linux: ``prctl(PR_SET_PDEATHSIG, SIGKILL)`` -- the kernel kills the worker the moment its
  parent dies. The signal is tied to the *thread* that started the worker, so it is only armed
  when that thread is the parent's main thread (a pool started from a short-lived server thread
  would otherwise lose its workers when that thread ends). Right after arming, the parent pid is
  checked again: a parent that died before ``prctl`` ran would never send the signal.
* Everywhere: a daemon watchdog thread that waits on multiprocessing's parent sentinel (a pipe
  that reaches EOF when the parent exits) and polls ``os.getppid()`` against the expected parent
  pid, then ``os._exit``\\ s.

The resource tracker needs nothing: it exits by itself once every holder of its pipe (the parent
and the workers) is gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import multiprocessing
import os
import signal
import sys
import threading
from typing import Any

__all__ = ["ParentInfo", "die_with_parent", "PARENT_POLL_SECONDS"]

#: how often the watchdog re-checks the parent pid (it also wakes at once on the parent sentinel)
PARENT_POLL_SECONDS = 0.25
#: exit status of a worker whose parent died
_ORPHAN_EXIT = 70
_PR_SET_PDEATHSIG = 1


class ParentInfo:
    """Initializer argument that records, when it is pickled for a child (which happens in the
    thread starting that child), the parent's pid and whether that thread is its main thread."""

    def __init__(self, pid: int | None = None, main_thread: bool = False) -> None:
        self.pid = pid
        self.main_thread = main_thread

    def __reduce__(self) -> tuple[Any, tuple[int, bool]]:
        return (ParentInfo, (os.getpid(), threading.current_thread() is threading.main_thread()))

    def __repr__(self) -> str:
        return f"ParentInfo(pid={self.pid}, main_thread={self.main_thread})"


def _arm_pdeathsig() -> bool:
    """``prctl(PR_SET_PDEATHSIG, SIGKILL)`` on Linux; returns whether it was armed."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):  # no libc / no prctl: the watchdog still covers it
        return False


def _watch(parent_pid: int, sentinel: int | None, interval: float) -> None:
    from multiprocessing.connection import wait

    while True:
        if sentinel is not None:
            try:
                gone = bool(wait([sentinel], timeout=interval))
            except OSError:  # sentinel unusable: fall back to polling only
                sentinel, gone = None, False
        else:
            threading.Event().wait(interval)
            gone = False
        if gone or os.getppid() != parent_pid:
            os._exit(_ORPHAN_EXIT)


def die_with_parent(info: ParentInfo | None = None, *, interval: float = PARENT_POLL_SECONDS) -> None:
    """Make this (child) process exit when its parent process dies; see the module docstring.

    ``info`` comes from the parent (a :class:`ParentInfo` passed through ``initargs``); without
    it the current parent pid is taken and no death signal is armed.
    """
    parent_pid = info.pid if info is not None and info.pid is not None else os.getppid()
    if info is not None and info.main_thread:
        _arm_pdeathsig()
    if os.getppid() != parent_pid:  # the parent died before the signal was armed
        os._exit(_ORPHAN_EXIT)
    sentinel: int | None = None
    parent = multiprocessing.parent_process()  # None when not started by multiprocessing: poll only
    if parent is not None and parent.pid == parent_pid:
        with contextlib.suppress(ValueError):  # a closed process object has no sentinel
            sentinel = parent.sentinel
    threading.Thread(
        target=_watch, args=(parent_pid, sentinel, interval), name="grounded-parent-watchdog", daemon=True
    ).start()
