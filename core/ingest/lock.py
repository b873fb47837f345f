"""One writer per output folder: ``OUT/.lock``.

The running ingest holds an exclusive :func:`fcntl.flock` on ``OUT/.lock`` for the whole run and
writes who it is into the file (pid, host, boot id, start time). The kernel drops the lock when
the process ends in any way (``kill -9`` included), so a lock left by a killed run is never
stuck: the next run takes it, and warns naming the run that ended without releasing it (its
record is still in the file: the pid is gone, or the machine rebooted since). A second run while
the first is alive is refused with :class:`~grounded.ingest.errors.OutputLockedError` naming the
running one. The file itself stays (emptied on release): replacing or removing a lock file
while others wait on it would let two writers in. It is opened without following a symbolic link
(``O_NOFOLLOW``, and only a regular file is locked): a link planted at ``OUT/.lock`` is refused
with :class:`~grounded.errors.OutputError`, its target untouched.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
import stat
import time
from pathlib import Path
from typing import Any

from ..errors import OutputError, escape_controls
from ..io.atomic import file_kind
from .errors import OutputLockedError

__all__ = ["OutLock", "LOCK_NAME"]

log = logging.getLogger(__name__)

LOCK_NAME = ".lock"


def boot_id() -> str:
    """This boot of the machine (Linux: ``/proc/sys/kernel/random/boot_id``), else ""."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _describe(holder: dict[str, Any]) -> str:
    started = holder.get("started")
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(started)) if isinstance(started, (int, float)) else "?"
    return f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, started {when}"


def _why_stale(holder: dict[str, Any]) -> str:
    if holder.get("host") != socket.gethostname():
        return "its host no longer holds the lock"
    if holder.get("boot_id") and holder.get("boot_id") != boot_id():
        return "the machine rebooted since"
    pid = holder.get("pid")
    if isinstance(pid, int):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "its process is gone"
        except PermissionError:
            pass
    return "it no longer holds the lock"


class OutLock:
    """The exclusive writer lock of one output folder (a context manager)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / LOCK_NAME
        self._fd: int | None = None

    @staticmethod
    def _read(fd: int) -> dict[str, Any]:
        os.lseek(fd, 0, os.SEEK_SET)
        data = os.read(fd, 65536)
        try:
            holder = json.loads(data.decode("utf-8")) if data.strip() else {}
        except (UnicodeDecodeError, ValueError):
            return {}
        return holder if isinstance(holder, dict) else {}

    def _refuse(self, mode: int) -> OutputError:
        return OutputError(self.path, f"is {file_kind(mode) or 'not a regular file'}, not a regular file: refusing "
                                      "to lock or write through it (grounded ingest creates its own .lock; remove it)")

    def _open(self) -> int:
        """The lock file, created if missing, never through a link (see the module docstring)."""
        try:
            mode = os.lstat(self.path).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise OutputError(self.path, f"cannot inspect the lock file: {exc.strerror or exc}") from exc
        if mode is not None and not stat.S_ISREG(mode):  # a link, a FIFO, a device: never opened
            raise self._refuse(mode)
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:  # a link planted between the check and the open
                raise self._refuse(stat.S_IFLNK) from exc
            raise OutputError(self.path, f"cannot create the lock file: {exc.strerror or exc}") from exc
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            raise self._refuse(mode)
        return fd

    def acquire(self) -> None:
        """Take the lock or raise :class:`OutputLockedError` naming the running ingest."""
        try:
            import fcntl
        except ImportError:  # not POSIX (Windows): no flock
            log.warning("ingest: %s: no file locking on this platform; run one ingest at a time into it", escape_controls(str(self.root)))
            return

        fd = self._open()
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = self._read(fd)
            os.close(fd)
            running = _describe(holder) if holder else "starting now"
            raise OutputLockedError(
                f"{self.root} is being written by another grounded ingest ({running}); "
                "wait for it to finish or write to another -o folder"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise OutputError(self.path, f"cannot lock: {exc.strerror or exc}") from exc
        previous = self._read(fd)
        if previous:
            log.warning(
                "ingest: %s: taking over the lock of an ingest that ended without releasing it (%s: %s)",
                self.root, _describe(previous), _why_stale(previous),
            )
        me = {"pid": os.getpid(), "host": socket.gethostname(), "boot_id": boot_id(), "started": round(time.time(), 3)}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode("utf-8"), 0)
        os.fsync(fd)
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        import fcntl

        try:
            os.ftruncate(self._fd, 0)  # a clean end: the next run has nothing to take over
        finally:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> OutLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
