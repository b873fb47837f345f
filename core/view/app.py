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
When the server listens on a loopback address, requests whose ``Host`` is not a loopback name are
refused (403): a web page elsewhere cannot reach the viewer through DNS rebinding.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit

from ..attribution import highlight, render_pages
from ..errors import GroundedError
from ..search import DEFAULT_MODE, MODES, Hit, SearchIndex, hit_chunk, hit_from_row, search, source_pdf
from ..search.errors import (
    EmptyQueryError,
    MixedConfigurationsError,
    NoEmbeddingsError,
    NoTextIndexError,
    SourceChangedError,
)

__all__ = ["ViewerApp", "Response", "ASSETS", "MAX_K", "LOOPBACK_NAMES"]

#: asset name -> content type; the only files ``/static/`` serves (package data of grounded.view)
ASSETS = {
    "app.js": "text/javascript; charset=utf-8",
    "app.css": "text/css; charset=utf-8",
    "index.html": "text/html; charset=utf-8",
}
#: most hits one search returns
MAX_K = 50
#: Host names accepted when the server listens on a loopback address
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
#: PDFs kept in memory between page requests (keyed by path, sha256, size and mtime)
_PDF_CACHE_SIZE = 4


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
    query model (tests); ``loopback``: the server listens on a loopback address (Host check)."""

    def __init__(self, out: str | Path, *, embedder: Any = None, loopback: bool = True) -> None:
        self.index = SearchIndex(out)
        self.embedder = embedder
        self.loopback = loopback
        self._mupdf = threading.Lock()  # PyMuPDF is not thread-safe: one render/highlight at a time
        self._pdfs: OrderedDict[tuple[str, str, int, int], bytes] = OrderedDict()

    # -- dispatch ------------------------------------------------------------------------------
    def handle(self, method: str, target: str, host: str | None = None) -> Response:
        if method not in ("GET", "HEAD"):
            return Response.error(405, f"method {method} not allowed (the viewer is read-only)")
        if self.loopback and not _loopback_host(host):
            return Response.error(403, f"host {host!r} refused: the viewer answers only to 127.0.0.1/localhost")
        parts = urlsplit(target)
        path = unquote(parts.path)
        if "\x00" in path or any(seg == ".." for seg in path.replace("\\", "/").split("/")):
            return Response.error(403, "path traversal refused")
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        try:
            return self._route(path, query)
        except (MixedConfigurationsError, NoEmbeddingsError, NoTextIndexError, SourceChangedError) as exc:
            return Response.error(409, str(exc))
        except (GroundedError, OSError) as exc:
            return Response.error(500, " ".join(str(exc).split()))

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
            "default_mode": DEFAULT_MODE,
            "text_index": self.index.text_column() is not None,
            "vectors": self.index.vector_column is not None,
        })

    def search(self, query: Mapping[str, str]) -> Response:
        question = query.get("q", "")
        mode = query.get("mode") or DEFAULT_MODE
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
        except EmptyQueryError as exc:
            return Response.error(400, str(exc))
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
        pdf = self._pdf(hit)
        with self._mupdf:
            rendered = render_pages(pdf, hit_chunk(hit, pages=[page]), dpi)
        return Response(200, rendered[0][1], "image/png")

    def annotated(self, query: Mapping[str, str]) -> Response:
        hit = self._hit(query)
        if isinstance(hit, Response):
            return hit
        pdf = self._pdf(hit)
        with self._mupdf:
            data = highlight(pdf, [hit_chunk(hit)])
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
    def _hit(self, query: Mapping[str, str]) -> Hit | Response:
        chunk_id = query.get("id", "")
        row = self.index.row(chunk_id) if chunk_id else None
        if row is None:
            return Response.error(404, "no such chunk in the index")
        return hit_from_row(row, rank=0, score=0.0, mode="row")

    def _pdf(self, hit: Hit) -> bytes:
        return self._read_pdf(hit.source_path, hit.source_sha256)

    def _read_pdf(self, path: str, sha: str) -> bytes:
        try:
            stat = Path(path).stat()
        except OSError:
            return source_pdf(path, sha)  # raises SourceChangedError naming the PDF
        key = (path, sha, stat.st_size, stat.st_mtime_ns)
        with self._mupdf:
            data = self._pdfs.get(key)
            if data is not None:
                self._pdfs.move_to_end(key)
                return data
        data = source_pdf(path, sha)
        with self._mupdf:
            self._pdfs[key] = data
            while len(self._pdfs) > _PDF_CACHE_SIZE:
                self._pdfs.popitem(last=False)
        return data

    def _hit_json(self, hit: Hit) -> dict[str, Any]:
        d = hit.to_dict()
        cid = quote(hit.chunk_id, safe="")
        d["source_name"] = Path(hit.source_path).name
        d["page_images"] = [{"page": p, "url": f"/api/page.png?id={cid}&page={p}"} for p in hit.pages]
        d["annotated_url"] = f"/api/annotated.pdf?id={cid}"
        d["source_url"] = f"/api/source.pdf?path={quote(hit.source_path, safe='')}"
        return d


def _loopback_host(host: str | None) -> bool:
    if not host:
        return False
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    return name.lower() in LOOPBACK_NAMES
