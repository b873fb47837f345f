"""Refuse ``ingest()`` called at the top level of a script without ``if __name__ == "__main__":``.

The local engine starts its workers with the ``spawn`` method: each worker imports the main
script again (as ``__mp_main__``). A call that is not under the ``__main__`` guard then runs once
more in every worker while it starts, and the pool breaks before any document is parsed. This is
detected in the parent, before any work: the frame of the main script that (directly or not)
called ``ingest`` is found on the stack, and the script's syntax tree tells whether that line is
inside an ``if __name__ == "__main__":`` block. Like :mod:`multiprocessing.spawn`, a
``__main__.py`` (``python -m package``) is never run again in a worker: it is not checked.

:func:`check_pickled_for_spawned_pool` applies the same rule to an object a *framework's* process
pool sends to its workers (LlamaIndex's ``IngestionPipeline.run(num_workers=N)`` spawns a
``multiprocessing`` pool): without the guard every worker dies while importing the script and the
pool starts new ones for ever, so the object refuses to be pickled and the run fails at once.
"""

from __future__ import annotations

import ast
import os
import sys
import threading
from collections.abc import Iterator
from types import FrameType

from ..errors import UnguardedMainError

__all__ = ["check_main_guard", "check_pickled_for_spawned_pool"]


def _is_main_test(node: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either side)."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
        return False
    sides = [node.left, node.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    values = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return bool(names and values)


def _guarded_lines(source: str) -> list[tuple[int, int]]:
    """Line ranges of the bodies of the module-level ``if __name__ == "__main__":`` blocks."""
    ranges = []
    for node in ast.parse(source).body:
        if isinstance(node, ast.If) and _is_main_test(node.test):
            ranges.append((node.body[0].lineno, max(n.end_lineno or n.lineno for n in node.body)))
    return ranges


def _main_frame(frame: FrameType | None) -> FrameType | None:
    """The module-level frame of the ``__main__`` script on the stack whose top is ``frame``, if any."""
    main = sys.modules.get("__main__")
    while frame is not None:
        if main is not None and frame.f_globals is vars(main) and frame.f_code.co_name == "<module>":
            return frame
        frame = frame.f_back
    return None


def check_main_guard(what: str = "ingest()", frame: FrameType | None = None) -> None:
    """Raise :class:`UnguardedMainError` when ``what`` runs from the top level of a ``__main__``
    script file outside ``if __name__ == "__main__":`` (spawned workers would run it again).
    ``frame``: the top of the stack to look at (default: the caller's)."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or os.path.basename(path) == "__main__.py":
        return  # an interactive session, python -c, a notebook, a package's __main__: never re-run
    frame = _main_frame(frame or sys._getframe(1))
    if frame is None:
        return
    try:
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        ranges = _guarded_lines(source)
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return  # cannot tell: let it run
    line = frame.f_lineno
    if any(first <= line <= last for first, last in ranges):
        return
    raise UnguardedMainError(
        f"{path}, line {line}: {what} runs at the top level of the script; its worker processes (spawn) "
        f'import the script again and would run it too: put the call under `if __name__ == "__main__":`'
    )


def _frames(frame: FrameType | None) -> Iterator[FrameType]:
    while frame is not None:
        yield frame
        frame = frame.f_back


def _pool_start_method(frame: FrameType | None) -> str | None:
    """The start method of a process pool that a frame of this stack is running (a
    ``multiprocessing`` ``Pool`` or a ``ProcessPoolExecutor`` among its locals), else None."""
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.pool import Pool

    for f in _frames(frame):
        for value in list(f.f_locals.values()):
            context = (getattr(value, "_ctx", None) if isinstance(value, Pool)
                       else getattr(value, "_mp_context", None) if isinstance(value, ProcessPoolExecutor) else None)
            if context is not None:
                return str(context.get_start_method())
    return None


def check_pickled_for_spawned_pool(what: str) -> None:
    """Raise :class:`UnguardedMainError` when ``what`` is being pickled for the workers of a process
    pool that starts them with ``spawn``/``forkserver`` (each imports the main script again) while
    the script runs it outside ``if __name__ == "__main__":``. Call it from ``__getstate__``: the
    pool pickles in a helper thread, so the main thread's stack is the one looked at. Any other
    pickling (a copy, a cache, a fork pool, a worker process) passes."""
    import multiprocessing

    if multiprocessing.parent_process() is not None:
        return  # a worker: its own main script is not the user's
    main_frame = sys._current_frames().get(threading.main_thread().ident or -1)
    if main_frame is None or _pool_start_method(main_frame) not in ("spawn", "forkserver"):
        return
    check_main_guard(what, frame=main_frame)
