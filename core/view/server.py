"""``grounded view``: the viewer app (:mod:`grounded.view.app`) on Python's ``http.server``.

One thread per request (``ThreadingHTTPServer``); the routes are in :class:`ViewerApp`. Requests
are logged through :mod:`logging` (logger ``grounded.view``), never printed.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from ..errors import GroundedError
from .app import ViewerApp

__all__ = ["ViewerServer", "make_server", "DEFAULT_PORT"]

log = logging.getLogger("grounded.view")

DEFAULT_PORT = 8765


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "grounded-view"
    protocol_version = "HTTP/1.1"

    def _answer(self, method: str) -> None:
        response = self.server.app.handle(method, self.path, self.headers.get("Host"))
        self.send_response(response.status)
        for name, value in response.all_headers().items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(response.body)

    def do_GET(self) -> None:
        self._answer("GET")

    def do_HEAD(self) -> None:
        self._answer("HEAD")

    def _refuse(self) -> None:
        self._answer(self.command)

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse  # -> 405 from the app

    def log_message(self, format: str, *args: Any) -> None:
        log.info("%s %s", self.address_string(), format % args)


class ViewerServer(ThreadingHTTPServer):
    """An HTTP server bound to ``(host, port)`` serving :class:`ViewerApp`."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: ViewerApp) -> None:
        self.app = app
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(out: str | Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *, embedder: Any = None) -> ViewerServer:
    """A viewer of ``out`` bound to ``host:port`` (``port=0``: a free port; see ``.url``); call
    ``serve_forever()`` to run it. The index is opened (and checked) before the socket is bound; the
    MiniLM query model loads in a background thread meanwhile."""
    app = ViewerApp(out, embedder=embedder, loopback=_is_loopback(host))
    server = ViewerServer((host, port), app)
    if embedder is None and app.index.vector_column is not None:
        threading.Thread(target=_warm_up, name="grounded-view-warm-up", daemon=True).start()
    return server


def _warm_up() -> None:
    """Load the query model in the background, so the first search does not wait for it."""
    from ..search import query_embedder

    try:
        query_embedder()
    except GroundedError as exc:  # reported again (and to the user) by the first search that needs it
        log.warning("the query model could not be loaded: %s", exc)
