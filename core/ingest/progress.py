"""The ingest progress bar: pages (as they are laid out or finished) and files, on stderr.

tqdm (a core dependency) draws it; it is silent when disabled (``--quiet``/``--no-progress``) or
when stderr is not a terminal. The page total grows as inputs are opened (lazily, like the
hashing), so the bar never waits for the whole corpus to be counted.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["Progress", "page_count"]


def page_count(path: str) -> int:
    """Pages of the PDF at ``path`` (0 when it cannot be opened: its error comes from the parse)."""
    import pymupdf

    from ..parsers.pdf_input import mupdf_quiet

    try:
        with mupdf_quiet(), pymupdf.open(path) as doc:
            return int(doc.page_count)
    except Exception:  # counting is best effort: the worker reports the real, typed error
        return 0


class Progress:
    """Pages done / pages known and files done / files, failures in the postfix."""

    def __init__(self, files: int, enabled: bool) -> None:
        from tqdm import tqdm

        self.shown = enabled and sys.stderr.isatty()
        self.files = files
        self.files_done = 0
        self.failed = 0
        self._expected: dict[str, int] = {}  # only the files in flight
        self._shown: dict[str, int] = {}
        self.bar = tqdm(total=0, unit="page", desc="ingest", disable=not self.shown, file=sys.stderr, dynamic_ncols=True)
        self._postfix()

    def _postfix(self) -> None:
        self.bar.set_postfix_str(f"files {self.files_done}/{self.files}, failed {self.failed}", refresh=False)

    def expect(self, key: str, pages: int) -> None:
        """``key`` (a path) is about to be processed and has ``pages`` pages."""
        self._expected[key] = pages
        self.bar.total += pages
        self.bar.refresh()

    def expected(self, key: str) -> int:
        """Pages counted for ``key`` by :meth:`expect` (0 when not counted)."""
        return self._expected.get(key, 0)

    def on_pages(self, key: str) -> Callable[[int, int], None]:
        """A parser ``progress(done, total)`` callback moving the bar while ``key`` is laid out."""

        def report(done: int, total: int) -> None:
            shown = self._shown.get(key, 0)
            if done > shown:
                self._shown[key] = done
                self.bar.update(done - shown)

        return report

    def file_done(self, key: str, pages: int = 0, failed: bool = False, skipped: bool = False) -> None:
        """``key`` finished (``pages`` parsed), failed or was skipped: its pages count as passed."""
        expected = self._expected.pop(key, 0)
        shown = self._shown.pop(key, 0)
        final = max(pages, expected)
        if final > expected:
            self.bar.total += final - expected
        if not skipped or expected:
            self.bar.update(final - shown)
        self.files_done += 1
        self.failed += bool(failed)
        self._postfix()
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()
