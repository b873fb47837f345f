"""How the layout model's ONNX nets run (issue #41): the same nets, the same inputs, the same
outputs, less time.

PyMuPDF's layout pass (``page.get_layout()``, pymupdf-layout) runs, per page, an image-feature CNN
(``feature_imf1.onnx``: the page rendered at 72 dpi, resized to 300 x 300 grey, in; a 160-channel
300 x 300 feature map and 12 class logits out) and then the graph net over the page's boxes. The
CNN is about three quarters of the ONNX time. Two levers, both exact:

* **memory arena** (:data:`IMF_ARENA`): pymupdf-layout creates every session with ONNX Runtime's
  CPU memory arena off (``make_session``), so that a long-lived process does not keep the peak of
  the variable-sized graph net. The CNN's shapes are fixed (one 300 x 300 page in, ~62 MB out), so
  its arena cannot grow past one page's peak; with the arena each run reuses its buffers instead
  of faulting ~0.3 GB of fresh pages in: 27 % less CPU in the CNN, outputs bit-identical.
* **prefetch** (:class:`ImagePrefetch`): the CNN of page N+1 runs on a second thread (ONNX Runtime
  releases the GIL) while this thread does page N's text page, features and graph net. The page
  image is rendered here, on the thread that owns the document (MuPDF is not thread-safe), with
  the same call the layout pass makes (``page.get_pixmap()``); the helper thread prepares it with
  pymupdf-layout's own functions (``resize_image``, ``to_gray``, min-max scaling, as
  ``ImageFeatureExtractorV1.predict``) and runs the session. When the layout pass then runs the CNN
  for that page, the prefetched outputs are handed back only if its input tensor is equal, element
  for element, to the prefetched one; otherwise (a page the layout pass changed before rendering
  it, such as one it turned upright) the CNN runs as before. The outputs are therefore the ones the
  layout pass would have computed itself.

Only the image-feature session is touched; the graph net and the table-grid nets run as
pymupdf-layout creates them. :func:`runtime_setting` names the configuration for the parser
version (the parse cache keeps trees of different configurations apart).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: file name prefix of pymupdf-layout's image-feature nets (fixed input shape)
IMF_PREFIX = "feature_imf"
#: ONNX Runtime's CPU memory arena on for the image-feature net (fixed shapes: bounded)
IMF_ARENA = True
#: the image-feature net of the next page runs ahead on a second thread (one process, default
#: threads; not in the parser's worker processes, which already fill the cores)
IMF_PREFETCH = True
#: ONNX Runtime intra-op threads of the image-feature net when it is prefetched (None: the
#: process's setting). One: the prefetch thread then takes the second core while this thread works
#: on the first; with ORT's default two threads the three contend for two cores (quiet machine, 44
#: pages: layout pass 18.46 s wall with two threads, 16.03 s with one; stock 19.56 s)
IMF_PREFETCH_THREADS: int | None = 1


def is_imf_model(path: Any) -> bool:
    """Whether an ONNX model path is pymupdf-layout's image-feature net."""
    return Path(str(path)).name.startswith(IMF_PREFIX)


class ImagePrefetch:
    """The image-feature CNN of the pages of one layout call, one page ahead, on a helper thread.

    :meth:`plan` names the document and the 0-based pages the layout pass is about to lay out, in
    its order; :meth:`answer` is called in place of the session's own run for every CNN run of the
    layout pass: it starts the next page and returns this page's prefetched outputs (if the input
    is the same), else None (the caller runs the session itself).
    """

    def __init__(self) -> None:
        #: held by the layout pass whose pages are planned (one plan per process at a time)
        self.busy = threading.Lock()
        self._owner: int | None = None
        self._executor: ThreadPoolExecutor | None = None
        self._doc: Any = None
        self._session: Any = None
        self._pages: list[int] = []
        self._next = 0  # index in _pages of the next page to prefetch
        self._jobs: dict[int, Future[tuple[Any, list[Any]]]] = {}
        self._calls = 0  # CNN runs seen in this plan
        self.hits = 0
        self.misses = 0

    # -- driven by the layout pass (its own thread) ---------------------------------------------
    def plan(self, doc: Any, pages: Sequence[int], session: Any) -> None:
        """Start prefetching ``pages`` of ``doc`` (in the order the layout pass visits them)."""
        self.clear()
        self._owner = threading.get_ident()
        self._doc, self._pages, self._session = doc, list(pages), session
        self._next = self._calls = 0
        self._submit_next()

    def clear(self) -> None:
        """Forget the plan (waits for a running job; its outputs are dropped)."""
        for job in self._jobs.values():
            job.cancel()
        for job in self._jobs.values():
            if not job.cancelled():
                with contextlib.suppress(Exception):  # a failed prefetch only means the CNN ran inline
                    job.result()
        self._jobs = {}
        self._doc, self._pages, self._owner = None, [], None

    def answer(self, output_names: Any, feed: dict[str, Any]) -> list[Any] | None:
        """This CNN run's outputs if they were prefetched for the same input, else None."""
        if self._doc is None or threading.get_ident() != self._owner:
            return None  # no plan, or a layout pass on another thread: the net runs inline
        index = self._calls
        self._calls += 1
        self._submit_next()  # the next page starts before this one is waited for
        job = self._jobs.pop(index, None)
        if job is None:
            self.misses += 1
            return None
        try:
            tensor, outputs = job.result()
        except Exception as exc:  # noqa: BLE001 - the layout pass then runs the CNN itself
            log.debug("image-feature prefetch failed: %s", exc)
            self.misses += 1
            return None
        import numpy as np

        (given,) = feed.values()
        if tensor.shape != given.shape or not np.array_equal(tensor, given):
            self.misses += 1
            return None
        names = [o.name for o in self._session.get_outputs()]
        if output_names is not None and list(output_names) != names:
            self.misses += 1
            return None
        self.hits += 1
        return outputs

    def _submit_next(self) -> None:
        if self._next >= len(self._pages) or self._next > self._calls:
            return  # at most one page ahead of the layout pass
        index, pno = self._next, self._pages[self._next]
        self._next += 1
        try:
            pix = self._doc.load_page(pno).get_pixmap()  # as pymupdf_util_base.extract_base_elements
        except Exception as exc:  # noqa: BLE001
            log.debug("image-feature prefetch: page %d not rendered: %s", pno + 1, exc)
            return
        import numpy as np

        image = np.frombuffer(pix.samples, dtype=np.uint8).reshape(pix.height, pix.width, pix.n).copy()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="grounded-imf")
        self._jobs[index] = self._executor.submit(_run_imf, self._session, image)


def _imf_input(session: Any, page_img: Any) -> Any:
    """The CNN's input tensor for a page image, exactly as ``ImageFeatureExtractorV1.predict``."""
    import numpy as np
    from pymupdf.layout.common_util import resize_image, to_gray

    shape = session.get_inputs()[0].shape
    target_h, target_w = shape[2], shape[3]
    img_gray = to_gray(resize_image(page_img, (target_w, target_h))).astype(np.float32)
    min_val, max_val = img_gray.min(), img_gray.max()
    if max_val > min_val:
        img_gray = (img_gray - min_val) / (max_val - min_val)
    else:
        img_gray = np.zeros_like(img_gray, dtype=np.float32)
    return np.expand_dims(np.expand_dims(img_gray, axis=0), axis=0)


def _run_imf(session: Any, page_img: Any) -> tuple[Any, list[Any]]:
    tensor = _imf_input(session, page_img)
    names = [o.name for o in session.get_outputs()]
    return tensor, session.run_direct(names, {session.get_inputs()[0].name: tensor})


#: the prefetcher of this process (None: prefetch off, or the image net not loaded by grounded)
prefetcher: ImagePrefetch | None = None
#: the image-feature session grounded loaded in this process (None: not loaded by grounded)
imf_session: Any = None


def runtime_setting(prefetch: bool | None = None) -> str:
    """The layout runtime configuration, for the parser version and reports."""
    on = prefetcher is not None if prefetch is None else prefetch
    parts = []
    if imf_session is None:  # the model was not loaded by grounded (a plain ``import pymupdf``)
        return "layout runtime stock"
    if IMF_ARENA:
        parts.append("imf arena")
    if on:
        parts.append(f"imf prefetch ({IMF_PREFETCH_THREADS} thread)" if IMF_PREFETCH_THREADS else "imf prefetch")
    return "layout runtime " + ("+".join(parts) if parts else "stock")
