"""The layout runtime of the pymupdf backend (issue #41): the image-feature net's memory arena and
its prefetch on a second thread are in effect, change no layout box, and are named in the parser
version. Real PyMuPDF, real layout model, real shared PDFs; each configuration in a fresh process
(the ONNX sessions are configured when the model loads)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.data import shared

_CHILD = """
import json, sys
from grounded.parsers.backends.pymupdf import layout as L, layout_runtime as R
R.IMF_ARENA, R.IMF_PREFETCH = {arena}, {prefetch}
L._load_layout({threads})
import pymupdf
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
imf = R.imf_session
graph = pymupdf._get_layout.__closure__[0].cell_contents._model.session
layouts = L._layout_pages(sys.argv[1], [0, 1, 2])
boxes = [[b.boxclass, b.x0, b.y0, b.x1, b.y1, b.table] for lay in layouts for b in lay.boxes]
print(json.dumps({{
    "imf_arena": imf.get_session_options().enable_cpu_mem_arena if imf is not None else None,
    "graph_arena": graph.get_session_options().enable_cpu_mem_arena,
    "prefetch": R.prefetcher is not None,
    "hits": R.prefetcher.hits if R.prefetcher else 0,
    "misses": R.prefetcher.misses if R.prefetcher else 0,
    "version": PyMuPDFParser().version(),
    "boxes": boxes,
}}, default=str))
"""


def _run(arena: bool, prefetch: bool, threads: int | None = None) -> dict:
    pdf = shared("long", "cermine_web_example3_clinsci.pdf")
    code = _CHILD.format(arena=arena, prefetch=prefetch, threads=threads)
    done = subprocess.run([sys.executable, "-c", code, str(pdf)], capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_default_runtime_is_in_effect_names_itself_and_keeps_every_layout_box():
    fast = _run(arena=True, prefetch=True)
    stock = _run(arena=False, prefetch=False)
    # the image net runs with the arena (fixed shapes); the graph net as pymupdf-layout makes it
    assert fast["imf_arena"] is True and fast["graph_arena"] is False
    assert stock["imf_arena"] is False
    # every page's image net came from the prefetch, whose input matched the layout pass's own
    assert fast["prefetch"] and (fast["hits"], fast["misses"]) == (3, 0)
    assert not stock["prefetch"]
    # the parser version names the configuration, so the parse cache keeps trees apart
    assert "layout runtime imf arena+imf prefetch" in fast["version"]
    assert "layout runtime" in stock["version"] and "prefetch" not in stock["version"]
    # the same layout, box for box and class for class
    assert fast["boxes"] and fast["boxes"] == stock["boxes"]


def test_worker_processes_keep_the_arena_without_a_prefetch_thread():
    one = _run(arena=True, prefetch=True, threads=1)  # as the parser's worker processes load it
    assert one["imf_arena"] is True and not one["prefetch"]
    assert "imf arena" in one["version"] and "prefetch" not in one["version"]


def test_a_prefetch_for_another_input_is_not_used():
    import numpy as np

    from grounded.parsers.backends.pymupdf.layout_runtime import ImagePrefetch

    class _Session:
        def __init__(self) -> None:
            self.runs = 0

        def get_inputs(self):
            return [type("I", (), {"name": "input", "shape": ["b", 1, 300, 300]})()]

        def get_outputs(self):
            return [type("O", (), {"name": "combined"})()]

        def run_direct(self, names, feed):
            self.runs += 1
            return [np.zeros(1)]

    import pymupdf

    doc = pymupdf.open(shared("long", "cermine_web_example3_clinsci.pdf"))
    prefetch = ImagePrefetch()
    session = _Session()
    prefetch.plan(doc, [0, 1], session)
    other = {"input": np.ones((1, 1, 300, 300), dtype=np.float32)}
    # a layout pass on another thread is never answered from this plan
    import threading

    seen: list = []
    worker = threading.Thread(target=lambda: seen.append(prefetch.answer(["combined"], other)))
    worker.start()
    worker.join()
    assert seen == [None] and (prefetch.hits, prefetch.misses) == (0, 0)
    assert prefetch.answer(["combined"], other) is None  # not the rendered page: the net runs inline
    assert prefetch.misses == 1 and prefetch.hits == 0
    prefetch.clear()
    doc.close()
