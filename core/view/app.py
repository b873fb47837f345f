"""The viewer's routes, independent of the HTTP server: a request (method, target, Host header) ->
a :class:`Response`.

Routes (GET/HEAD only):

* ``/`` the page; ``/static/<name>`` its assets -- a fixed list shipped as package data;
* ``/api/info`` what the index holds; ``/api/search?q=&k=&mode=`` the hits as JSON;
* ``/api/page.png?id=&page=[&dpi=]`` one page of a hit with its line boxes drawn
  (:func:`grounded.attribution.render_pages`);
* ``/api/annotated.pdf?id=`` the hit's PDF with highlight annotations, made in memory
  (:func:`grounded.attribution.highlight`);
* ``/api/source.pdf?path=`` an indexed PDF as it was indexed.

Read-only and confined: nothing is written anywhere (OUT included); the only files read are the
package's assets, the LanceDB table under OUT and the PDFs the table names, each checked against the
sha256 recorded at ingest (a changed PDF is refused, never drawn on). A path with a ``..`` segment
(also percent-encoded) is refused (403), any other unknown path or a PDF that is not indexed is 404.
When the server listens on a loopback address, a request is answered only when its one ``Host``
header is a loopback name (``127.0.0.1``, ``localhost``, ``[::1]`` or the bound address) with the
served port (403 otherwise, 400 for two ``Host`` headers): a web page elsewhere cannot reach the
viewer through DNS rebinding. The API and page-image routes refuse a request a browser marks as
coming from another site (``Sec-Fetch-Site: cross-site`` or ``same-site``, 403), and every response
says ``Cross-Origin-Resource-Policy: same-origin``: another page cannot embed the rendered pages.

Memory is bounded: the rendered pages (:data:`RENDER_CACHE_BYTES`) and the PDFs read for them
(:data:`PDF_CACHE_BYTES`) are kept in least-recently-used caches bounded in bytes
(:class:`~grounded.view.cache.BytesLRU`), keyed by the PDF's path, sha256, size and mtime.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..attribution import highlight, render_pages
from ..errors import GroundedError, InputError
from ..focus import Focus
from ..focus.boxes import span_boxes
from ..runtime.memory import release_memory
from ..search import MODES, Hit, SearchIndex, default_mode, hit_chunk, hit_from_row, search, source_pdf
from ..search.errors import (
    EmptyQueryError,
    MixedConfigurationsError,
    NoEmbeddingsError,
    NoSearchableWordsError,
    NoTextIndexError,
    SearchError,
    SourceChangedError,
)
from ..search.focus import hit_view
from .cache import BytesLRU

#: the most focus spans a page or PDF request may carry
MAX_FOCUS_SPANS = 32


def _focus_spans(given: str, hit: Hit) -> tuple[tuple[int, int], ...] | Response:
    """The ``focus`` parameter ``a-b,c-d`` (offsets into the hit's text) as spans, checked."""
    if not given:
        return ()
    spans = []
    for part in given.split(",")[: MAX_FOCUS_SPANS + 1]:
        a, _, b = part.partition("-")
        if not (a.isdigit() and b.isdigit() and int(a) < int(b) <= len(hit.text)):
            return Response.error(400, f"focus must be start-end offsets into the chunk text (0..{len(hit.text)})")
        spans.append((int(a), int(b)))
    if len(spans) > MAX_FOCUS_SPANS:
        return Response.error(400, f"focus: at most {MAX_FOCUS_SPANS} spans")
    return tuple(spans)


__all__ = ["ViewerApp", "Response", "ASSETS", "MAX_K", "LOOPBACK_NAMES", "RENDER_CACHE_BYTES", "PDF_CACHE_BYTES"]

#: asset name -> content type; the only files ``/static/`` serves (package data of grounded.view)
ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "index.html": "text/html; charset=utf-8",
}
#: most hits one search returns
MAX_K = 50
#: Host names accepted (with the served port) when the server listens on a loopback address
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
#: ``Sec-Fetch-Site`` values answered on the API routes (absent: not a browser, or an old one)
_SAME_SITE = ("same-origin", "none")
#: ``name[:port]`` of a Host header: a bracketed IPv6 literal or a name of letters, digits, dots, hyphens
_HOST = re.compile(r"(?P<name>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+)(?::(?P<port>[0-9]{1,5}))?")
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' blob:; object-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}
#: bytes of rendered page PNGs kept (about 200-300 pages of a text PDF at the default 110 dpi)
RENDER_CACHE_BYTES = 64 * 2**20
#: bytes of PDFs kept between page requests (a larger PDF is read again for each request)
PDF_CACHE_BYTES = 256 * 2**20
#: renders (pages or annotated PDFs) between two releases of MuPDF's store and the freed C heap:
#: without them RSS grows ~0.2 MB per render (docs/results/viewer_memory.md)
RELEASE_EVERY = 10


@dataclass
class Response:
    status: int
    body: bytes
    content_type: str = "text/plain; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def json(cls, payload: Any, status: int = 200) -> Response:
        return cls(status, json.dumps(payload, ensure_ascii=False).encode("utf-8"), "application/json; charset=utf-8")

    @classmethod
    def error(cls, status: int, message: str) -> Response:
        return cls.json({"error": message, "status": status}, status)

    def all_headers(self) -> dict[str, str]:
        return {"Content-Type": self.content_type, **_SECURITY_HEADERS, **self.headers}


def _asset(name: str) -> bytes:
    return resources.files("grounded.view").joinpath("static", name).read_bytes()


class ViewerApp:
    """The viewer of one ingest output ``out``; ``embedder`` (texts -> vectors) replaces the MiniLM
    query model (tests); ``loopback``: the server listens on a loopback address (Host check);
    ``render_cache_bytes``/``pdf_cache_bytes``: the bounds of the two caches (0 turns one off).
    The server sets ``port`` (the served port, which the Host header must name) and ``bound_host``
    once its socket is bound."""

    def __init__(self, out: str | Path, *, embedder: Any = None, loopback: bool = True,
                 render_cache_bytes: int = RENDER_CACHE_BYTES, pdf_cache_bytes: int = PDF_CACHE_BYTES) -> None:
        self.index = SearchIndex(out)
        self.embedder = embedder
        self.loopback = loopback
        self.port: int | None = None
        self.bound_host: str | None = None
        self._mupdf = threading.Lock()  # PyMuPDF is not thread-safe: one render/highlight at a time
        self.renders = BytesLRU(render_cache_bytes)
        self.pdfs = BytesLRU(pdf_cache_bytes)
        self._rendered = 0

    # -- dispatch ------------------------------------------------------------------------------
    def handle(self, method: str, target: str, headers: Iterable[tuple[str, str]] = ()) -> Response:
        """The answer to ``method target`` with the request's ``headers`` (name, value) pairs, a
        repeated header given once per value."""
        if method not in ("GET", "HEAD"):
            return Response.error(405, f"method {method} not allowed (the viewer is read-only)")
        values: dict[str, list[str]] = {}
        for name, value in headers:
            values.setdefault(name.lower(), []).append(value)
        hosts = values.get("host", [])
        if len(hosts) > 1:
            return Response.error(400, "more than one Host header")
        refused = self._refused_host(hosts[0] if hosts else None)
        if refused:
            return Response.error(403, refused)
        parts = urlsplit(target)
        path = unquote(parts.path)
        if "\x00" in path or any(seg == ".." for seg in path.replace("\\", "/").split("/")):
            return Response.error(403, "path traversal refused")
        site = values.get("sec-fetch-site", [])
        if path.startswith("/api/") and any(v.strip().lower() not in _SAME_SITE for v in site):
            return Response.error(403, f"a request from another site ({site[0]}) is refused: open the viewer itself")
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        try:
            return self._route(path, query)
        except (MixedConfigurationsError, NoEmbeddingsError, NoTextIndexError, SourceChangedError) as exc:
            return Response.error(409, " ".join(str(exc).split()))
        except (GroundedError, OSError) as exc:
            return Response.error(500, " ".join(str(exc).split()))

    def _refused_host(self, host: str | None) -> str | None:
        """Why the ``Host`` header is refused (None: accepted). On a loopback address only a loopback
        name with the served port is accepted (no port: only when the served port is 80)."""
        if not self.loopback:
            return None
        match = _HOST.fullmatch(host or "")
        names = {*LOOPBACK_NAMES, self.bound_host, f"[{self.bound_host}]"}
        if match is None or match["name"].lower() not in names:
            return f"host {host!r} refused: the viewer answers only to 127.0.0.1/localhost"
        port = int(match["port"]) if match["port"] else 80
        if self.port is not None and port != self.port:
            return f"host {host!r} refused: the viewer serves port {self.port}"
        return None

    def _route(self, path: str, query: Mapping[str, str]) -> Response:
        if path in ("/", "/index.html"):
            return Response(200, _asset("index.html"), ASSETS["index.html"])
        if path.startswith("/static/"):
            name = path[len("/static/") :]
            if name not in ASSETS:
                return Response.error(404, "no such asset")
            return Response(200, _asset(name), ASSETS[name])
        routes = {
            "/api/info": self.info,
            "/api/search": self.search,
            "/api/page.png": self.page,
            "/api/annotated.pdf": self.annotated,
            "/api/source.pdf": self.source,
        }
        handler = routes.get(path)
        return handler(query) if handler else Response.error(404, "not found")

    # -- API -------------------------------------------------------------------------------------
    def info(self, query: Mapping[str, str]) -> Response:
        return Response.json({
            "out": str(self.index.out),
            "configs": self.index.configs(),
            "documents": len(self.index.sources()),
            "modes": list(MODES),
            "default_mode": default_mode(self.index),  # hybrid, or text when the index has no embeddings
            "text_index": self.index.text_column() is not None,
            "vectors": self.index.vector_column is not None,
        })

    def search(self, query: Mapping[str, str]) -> Response:
        question = query.get("q", "")
        mode = query.get("mode") or default_mode(self.index)
        if mode not in MODES:
            return Response.error(400, f"mode must be one of {', '.join(MODES)}")
        try:
            k = int(query.get("k") or 10)
        except ValueError:
            return Response.error(400, "k must be an integer")
        if not 1 <= k <= MAX_K:
            return Response.error(400, f"k must be in 1..{MAX_K}")
        try:
            hits = search(self.index, question, k, mode=mode, embedder=self.embedder)
        except (MixedConfigurationsError, NoEmbeddingsError, NoTextIndexError):
            raise  # 409: the index, not the question
        except NoSearchableWordsError as exc:  # in the page's words: its mode menu, not a command-line flag
            return Response.error(400, " ".join(f"{exc.reason}; choose the vector or hybrid mode, which search by meaning".split()))
        except SearchError as exc:
            if isinstance(exc, (EmptyQueryError, InputError, ValueError)):  # the question itself (empty, no words)
                return Response.error(400, " ".join(str(exc).split()))
            raise
        return Response.json({"question": question, "mode": mode, "hits": [self._hit_json(h) for h in hits]})

    def page(self, query: Mapping[str, str]) -> Response:
        hit = self._hit(query)
        if isinstance(hit, Response):
            return hit
        try:
            page, dpi = int(query.get("page", "")), int(query.get("dpi") or 110)
        except ValueError:
            return Response.error(400, "page and dpi must be integers")
        if page not in hit.pages:
            return Response.error(404, f"chunk {hit.chunk_id} is not on page {page}")
        if not 30 <= dpi <= 300:
            return Response.error(400, "dpi must be in 30..300")
        spans = _focus_spans(query.get("focus", ""), hit)
        if isinstance(spans, Response):
            return spans
        source = self._source_key(hit.source_path, hit.source_sha256)
        key = (hit.chunk_id, page, dpi, source, spans)
        png = self.renders.get(key) if source is not None else None
        if png is None:
            pdf = self._pdf(hit)
            focus = self._focus(hit, spans)
            with self._mupdf:
                png = render_pages(pdf, hit_chunk(hit, pages=[page]), dpi, focus=focus)[0][1]
                self._after_render()
            if source is not None:
                self.renders.put(key, png)
        return Response(200, png, "image/png")

    def annotated(self, query: Mapping[str, str]) -> Response:
        hit = self._hit(query)
        if isinstance(hit, Response):
            return hit
        spans = _focus_spans(query.get("focus", ""), hit)
        if isinstance(spans, Response):
            return spans
        pdf = self._pdf(hit)
        focus = self._focus(hit, spans)
        with self._mupdf:
            data = highlight(pdf, [hit_chunk(hit)], focus=[focus] if focus is not None else None)
            self._after_render()
        name = f"{Path(hit.source_path).stem}.highlighted.pdf"
        disposition = f"attachment; filename*=UTF-8''{quote(name)}"
        return Response(200, data, "application/pdf", {"Content-Disposition": disposition})

    def source(self, query: Mapping[str, str]) -> Response:
        path = query.get("path", "")
        sha = self.index.sources().get(path)
        if sha is None:
            return Response.error(404, "not an indexed PDF")
        disposition = f"inline; filename*=UTF-8''{quote(Path(path).name)}"
        return Response(200, self._read_pdf(path, sha), "application/pdf", {"Content-Disposition": disposition})

    # -- helpers ---------------------------------------------------------------------------------
    def _after_render(self) -> None:
        """Every :data:`RELEASE_EVERY` renders, empty MuPDF's store and return the freed C heap
        (called holding the MuPDF lock)."""
        self._rendered += 1
        if self._rendered % RELEASE_EVERY == 0:
            release_memory()

    def _hit(self, query: Mapping[str, str]) -> Hit | Response:
        chunk_id = query.get("id", "")
        row = self.index.row(chunk_id) if chunk_id else None
        if row is None:
            return Response.error(404, "no such chunk in the index")
        return hit_from_row(row, rank=0, score=0.0, mode="row")

    @staticmethod
    def _focus(hit: Hit, spans: tuple[tuple[int, int], ...]) -> Focus | None:
        """The focus of ``spans`` (offsets into the hit's text, as the search answered them) with its
        boxes from the parse cache; None without spans or without the tree (the chunk alone is drawn)."""
        if not spans:
            return None
        view = hit_view(hit)
        if view is None:
            return None
        boxes = span_boxes(view, hit.text, spans, body_start=hit.body_start, start_char=hit.start_char)
        return Focus(spans, tuple(boxes), "given", hit.text)

    def _pdf(self, hit: Hit) -> bytes:
        return self._read_pdf(hit.source_path, hit.source_sha256)

    @staticmethod
    def _source_key(path: str, sha: str) -> tuple[str, str, int, int] | None:
        """The cache key of an indexed PDF as it is on disk now (None: it cannot be read)."""
        try:
            stat = Path(path).stat()
        except OSError:
            return None
        return (path, sha, stat.st_size, stat.st_mtime_ns)

    def _read_pdf(self, path: str, sha: str) -> bytes:
        key = self._source_key(path, sha)
        data = self.pdfs.get(key) if key is not None else None
        if data is None:
            data = source_pdf(path, sha)  # raises SourceChangedError naming the PDF
            if key is not None:
                self.pdfs.put(key, data)
        return data

    def _hit_json(self, hit: Hit) -> dict[str, Any]:
        d = hit.to_dict()
        cid = quote(hit.chunk_id, safe="")
        d["source_name"] = Path(hit.source_path).name
        d["source_missing"] = not Path(hit.source_path).is_file()  # deleted or unmounted since the ingest: marked
        focus = ",".join(f"{a}-{b}" for a, b in hit.focus)
        tail = f"&focus={focus}" if focus else ""
        d["page_images"] = [{"page": p, "url": f"/api/page.png?id={cid}&page={p}{tail}"} for p in hit.pages]
        d["annotated_url"] = f"/api/annotated.pdf?id={cid}{tail}"
        d["source_url"] = f"/api/source.pdf?path={quote(hit.source_path, safe='')}"
        return d

