"""Atomic writes (temp file in the target folder + rename) and the guards on outputs.

Temp files are named ``.<target name>.<pid>-<random>.grounded.tmp``; a process killed mid-write can
leave one behind, and the next atomic write into that folder removes those whose writer is gone
(never other files). Several files are written as a group: all temp files first, then all renames.
Outputs never replace an input (:func:`refuse_overwriting_inputs`)."""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from ..errors import OutputError

__all__ = [
    "atomic_write_text",
    "atomic_write_bytes",
    "atomic_write_files",
    "refuse_overwriting_inputs",
    "InputFiles",
    "check_output_name",
    "check_output_target",
    "check_output_suffix",
    "is_stdout",
    "file_kind",
    "clean_stale_temp_files",
    "make_temp_dir",
    "clean_stale_temp_dirs",
    "OutputError",
]

log = logging.getLogger(__name__)
# process umask, read once at import (os.umask can only be read by setting it)
_UMASK = os.umask(0o022)
os.umask(_UMASK)


# -- atomic writes ------------------------------------------------------------------------------------
_TMP_SUFFIX = ".grounded.tmp"
_TMP_NAME = re.compile(r"^\..+\.(\d+)-[0-9a-z_]+" + re.escape(_TMP_SUFFIX) + "$")
_TMP_NAME_CHARS = 100  # the target name is cut to this in the temp name (which must fit NAME_MAX)
_STALE_AGE = 86400.0  # where a writer's liveness cannot be checked, its temp files expire after a day
_cleaned_dirs: set[str] = set()


def _name_max(folder: Path) -> int:
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (AttributeError, OSError, ValueError):
        return 255


def _existing_parent(path: Path) -> Path:
    """The nearest ancestor of ``path`` that exists (a file there blocks the folders below it)."""
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return parent


def _output_error(path: Path, exc: OSError) -> OutputError:
    if isinstance(exc, OutputError):
        return exc
    if exc.errno == errno.ENAMETOOLONG:
        return OutputError(path, f"file name too long ({len(path.name.encode())} bytes; the limit is "
                                 f"{_name_max(_existing_parent(path))}): choose a shorter name")
    return OutputError(path, f"cannot write: {exc.strerror or exc}")


def _pid_start_time(pid: int) -> float | None:
    """Start time (epoch seconds) of process ``pid`` from /proc (Linux), None when unknown."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of the whole line: start time in clock ticks after boot
        boot = next(int(ln.split()[1]) for ln in Path("/proc/stat").read_text().splitlines() if ln.startswith("btime"))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _writer_gone(pid: int, mtime: float) -> bool:
    """True when the process that wrote a temp file (pid from its name, last written at ``mtime``)
    no longer runs: the pid is free, or it now belongs to a process started after the file."""
    if pid == os.getpid():
        return False
    if sys.platform == "win32":  # os.kill would terminate the process: only the age tells
        return time.time() - mtime > _STALE_AGE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, owned by another user
        pass
    except OSError:
        return False
    started = _pid_start_time(pid)
    if started is not None:
        return started > mtime + 1.0  # the pid was reused by a process younger than the file
    return time.time() - mtime > _STALE_AGE


def _stale_entries(folder: str | Path, pattern: re.Pattern[str], *, dirs: bool) -> Iterator[os.DirEntry[str]]:
    """Entries of ``folder`` named by ``pattern`` (group 1: the writer's pid) -- directories with
    ``dirs``, else regular files -- whose writer is gone."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        m = pattern.match(entry.name)
        if m is None:
            continue
        try:
            kind_ok = entry.is_dir(follow_symlinks=False) if dirs else entry.is_file(follow_symlinks=False)
            if kind_ok and _writer_gone(int(m.group(1)), entry.stat().st_mtime):
                yield entry
        except OSError:
            continue


def clean_stale_temp_files(folder: str | Path) -> list[Path]:
    """Remove temp files of interrupted atomic writes (our naming pattern only) whose writer is
    gone; returns what was removed. Temp files of live writers and all other files stay."""
    removed: list[Path] = []
    for entry in _stale_entries(folder, _TMP_NAME, dirs=False):
        try:
            os.unlink(entry.path)
        except OSError as exc:
            log.debug("cannot remove stale temp file %s: %s", entry.path, exc)
            continue
        removed.append(Path(entry.path))
        log.info("removed %s (left by an interrupted write)", entry.path)
    return removed


def make_temp_dir(prefix: str) -> tempfile.TemporaryDirectory[str]:
    """A private temporary directory (mode 0700) named ``<prefix><pid>-<random>`` in the system
    temp folder; the ones a killed process left (its pid gone) are removed first."""
    folder = tempfile.gettempdir()
    key = f"{folder}\0{prefix}"
    if key not in _cleaned_dirs:
        _cleaned_dirs.add(key)
        clean_stale_temp_dirs(folder, prefix)
    return tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-")


def clean_stale_temp_dirs(folder: str | Path, prefix: str) -> list[Path]:
    """Remove directories named ``<prefix><pid>-<random>`` in ``folder`` whose creating process is
    gone (left by a killed run, see :func:`make_temp_dir`); returns what was removed."""
    import shutil

    removed: list[Path] = []
    for entry in _stale_entries(folder, re.compile(re.escape(prefix) + r"(\d+)-[0-9a-z_]+$"), dirs=True):
        shutil.rmtree(entry.path, ignore_errors=True)
        if not os.path.lexists(entry.path):
            removed.append(Path(entry.path))
            log.info("removed %s (left by an interrupted run)", entry.path)
    return removed


def _clean_once(folder: Path) -> None:
    """Clean a folder of stale temp files at the first write into it in this process."""
    key = os.path.abspath(folder)
    if key not in _cleaned_dirs:
        _cleaned_dirs.add(key)
        clean_stale_temp_files(folder)


def _write_temp(path: Path, data: bytes) -> str:
    prefix = f".{path.name[:_TMP_NAME_CHARS]}.{os.getpid()}-"
    fd, tmp = tempfile.mkstemp(prefix=prefix, suffix=_TMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        # mkstemp creates 0600; give the file the mode a plain open() would (or keep the old one)
        os.chmod(tmp, stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o666 & ~_UMASK)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return tmp


def _fsync_dir(folder: Path) -> None:
    """Make the renames durable (best effort; not possible on every platform)."""
    if sys.platform == "win32":
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def check_output_name(path: str | Path) -> None:
    """Raise :class:`OutputError` if ``path``'s file name is longer than its file system allows
    (checked before any work is spent on the output)."""
    path = Path(path)
    if len(path.name.encode()) > _name_max(_existing_parent(path)):
        raise _output_error(path, OSError(errno.ENAMETOOLONG, "File name too long"))


def file_kind(mode: int) -> str | None:
    """What a non-regular file is, in words (None for a regular file)."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def check_output_target(path: str | Path) -> None:
    """Raise :class:`OutputError` when ``path`` exists and is not a regular file (a symbolic link,
    a device, a FIFO, a directory): an atomic write renames a temp file over its target, which
    would replace the link or device itself. Write to ``-`` (see :func:`is_stdout`) for stdout."""
    path = Path(path)
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a missing folder is the writer's to report
        return
    except OSError as exc:
        raise _output_error(path, exc) from exc
    kind = file_kind(mode)
    if kind is not None:
        raise OutputError(path, f"is {kind}, not a regular file: refusing to replace it "
                                "(name a regular file, or '-' for stdout)")


def is_stdout(path: str | Path | None) -> bool:
    """True for the output names that mean standard output: ``-`` and ``/dev/stdout`` (written
    through the open stream, never renamed over)."""
    return path is not None and str(path) in ("-", "/dev/stdout")


def check_output_suffix(path: str | Path, allowed: Sequence[str]) -> None:
    """Raise :class:`OutputError` unless ``path`` ends in one of ``allowed`` (``.jsonl``, ...,
    compared case-insensitively): a ``.csv`` name never silently receives JSONL."""
    path = Path(path)
    if path.suffix.lower() not in {a.lower() for a in allowed}:
        shown = path.suffix or "no extension"
        raise OutputError(path, f"unknown output format ({shown}): name the file {' or '.join(allowed)}")


def atomic_write_files(files: Sequence[tuple[str | Path, bytes]]) -> list[Path]:
    """Write several files so that none is ever half-written: every temp file is written and
    synced first, then each is renamed over its target, in the order given.

    A target that exists and is not a regular file (a symbolic link, a device, a FIFO, a
    directory) is refused with :class:`OutputError` before anything is written: the rename would
    replace the link or device itself. A crash can leave a temp file (removed by the next write into that folder) or, between two
    renames, new files beside old ones (:func:`save_parse_pair` records a hash to detect that).
    Any OS failure raises :class:`OutputError` naming the target file.
    """
    targets = [(Path(p), data) for p, data in files]
    for path, _ in targets:
        check_output_name(path)
        blocker = _existing_parent(path)
        if not blocker.is_dir():
            raise OutputError(path, f"{blocker} is a file, not a folder")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _output_error(path, exc) from exc
        check_output_target(path)
        _clean_once(path.parent)
    temps: list[str] = []
    current = targets[0][0] if targets else Path()
    try:
        for path, data in targets:
            current = path
            temps.append(_write_temp(path, data))
        for (path, _), tmp in zip(targets, temps):
            current = path
            os.replace(tmp, path)
    except OSError as exc:
        raise _output_error(current, exc) from exc
    finally:
        for tmp in temps:  # only left when something failed
            if os.path.lexists(tmp):
                Path(tmp).unlink(missing_ok=True)
    for folder in dict.fromkeys(path.parent for path, _ in targets):
        _fsync_dir(folder)
    return [path for path, _ in targets]


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` via a temp file in the same folder + rename: never half-written."""
    return atomic_write_files([(path, data)])[0]


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def _file_keys(path: Path) -> tuple[str, tuple[int, int] | None]:
    """(resolved path, (device, inode) when the file exists): two paths name the same file when
    either matches (symlinks, ``..``, hard links)."""
    try:
        resolved = str(path.resolve())
    except (OSError, RuntimeError):
        resolved = os.path.abspath(path)
    try:
        st = path.stat()
    except OSError:
        return resolved, None
    return resolved, (st.st_dev, st.st_ino)


class InputFiles:
    """The files a command reads, indexed once, to refuse outputs that would replace one of them
    (the same file after resolving links and ``..``, or a hard link to it)."""

    def __init__(self, inputs: Iterable[str | Path]):
        self._by_path: dict[str, Path] = {}
        self._by_inode: dict[tuple[int, int], Path] = {}
        for given in inputs:
            resolved, inode = _file_keys(Path(given))
            self._by_path.setdefault(resolved, Path(given))
            if inode is not None:
                self._by_inode.setdefault(inode, Path(given))

    def refuse(self, outputs: Iterable[str | Path]) -> None:
        """Raise :class:`OutputError` for the first output that is one of the inputs."""
        for out in outputs:
            out = Path(out)
            resolved, inode = _file_keys(out)
            src = self._by_path.get(resolved) or (self._by_inode.get(inode) if inode is not None else None)
            if src is not None:
                raise OutputError(out, f"refusing to overwrite the input file {src}; choose another output name")


def refuse_overwriting_inputs(outputs: Iterable[str | Path], inputs: Iterable[str | Path]) -> None:
    """Raise :class:`OutputError` when an output is one of the inputs: grounded never replaces
    what the user gave."""
    InputFiles(inputs).refuse(outputs)


