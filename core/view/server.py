"""``grounded view``: the viewer app (:mod:`grounded.view.app`) on Python's ``http.server``.

The routes are in :class:`ViewerApp`; this module is the connection handling, built to stay up
under a browser's parallel requests, a burst of clients and silent connections:

* a listen backlog of :data:`LISTEN_BACKLOG` (the kernel caps it at ``net.core.somaxconn``): a burst
  of connects waits in the kernel queue instead of being reset;
* one dispatcher thread (:meth:`ViewerServer.serve_forever`) accepts connections and watches the
  silent ones with a selector; it reads what a client sends without waiting, and a connection goes
  to the bounded pool of :data:`DEFAULT_WORKERS` threads only once its request head (request line
  and headers) has arrived whole -- a client that sends it a byte at a time (slowloris) holds no
  worker -- and comes back to the dispatcher after a kept-alive response. A connection that stays silent for :data:`IDLE_TIMEOUT` is closed; at most
  :data:`MAX_CONNECTIONS` are open (the oldest silent one is closed to admit a new one, else new
  ones wait in the backlog), so half-open connections can neither hold a worker nor exhaust the
  file descriptors, and ``EMFILE`` pauses accepting instead of spinning;
* a request must be read within :data:`READ_TIMEOUT` (request line and headers together) and each
  response written within :data:`WRITE_TIMEOUT`;
* a client that drops its connection (``BrokenPipeError``, ``ConnectionResetError``) or times out
  is logged at debug level, never printed as a traceback; an unexpected error in a route is
  answered with a 500 JSON body (never a dropped request) and logged as one line;
* the error pages ``http.server`` makes itself (400, 414, 431, 501, ...) are JSON with the same
  security headers as every other response.

Requests are logged through :mod:`logging` (logger ``grounded.view``, debug level), never printed.
"""

from __future__ import annotations

import errno
import io
import ipaddress
import logging
import math
import queue
import selectors
import socket
import sys
import threading
import time
from contextlib import suppress
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from ..errors import GroundedError
from .app import Response, ViewerApp

__all__ = ["ViewerServer", "make_server", "PortInUseError", "DEFAULT_PORT", "DEFAULT_WORKERS", "LISTEN_BACKLOG",
           "MAX_CONNECTIONS", "IDLE_TIMEOUT", "READ_TIMEOUT", "WRITE_TIMEOUT"]

log = logging.getLogger("grounded.view")

DEFAULT_PORT = 8765
#: worker threads: the most requests answered at once
DEFAULT_WORKERS = 16
#: connections the kernel queues before the dispatcher accepts them (capped by net.core.somaxconn)
LISTEN_BACKLOG = 1024
#: connections open at once (silent, queued and being answered), well below a 1024-descriptor limit
MAX_CONNECTIONS = 512
#: seconds a connection may stay silent before (the next) request starts
IDLE_TIMEOUT = 15.0
#: seconds to read one request (request line and headers) once its first byte arrived
READ_TIMEOUT = 10.0
#: seconds to write one response
WRITE_TIMEOUT = 60.0
#: a request head longer than this goes to a worker unfinished (http.server refuses it: 414/431)
_HEAD_LIMIT = 65536 + 4096
#: recv without waiting (the dispatcher reads only what arrived)
_DONTWAIT = getattr(socket, "MSG_DONTWAIT", 0)
#: what :meth:`ViewerServer._read_head` returns for a client that closed its connection
_CLOSED = b""
#: errors of accept() that mean "out of descriptors or memory": pause accepting instead of spinning
_ACCEPT_PAUSE = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


class PortInUseError(GroundedError, OSError):
    """The port is taken by another program (or another ``grounded view``)."""


class _DeadlineReader(io.RawIOBase):
    """The socket's reading side with a deadline for the whole request (``deadline``, monotonic
    seconds) instead of a timeout per ``recv``; ``poll``: read only what has arrived (no wait)."""

    def __init__(self, sock: socket.socket, prefix: bytes = b"") -> None:
        super().__init__()
        self._sock = sock
        self._raw = sock.makefile("rb", buffering=0)
        self._prefix = prefix  # what the dispatcher read already (the request's head)
        self.deadline = math.inf
        self.poll = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        if self._prefix:
            n = min(len(buffer), len(self._prefix))
            buffer[:n] = self._prefix[:n]
            self._prefix = self._prefix[n:]
            return n
        if self.poll:
            self._sock.settimeout(0.0)
        else:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the request was not read in time")
            self._sock.settimeout(left)
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _Writer(io.BufferedIOBase):
    """The socket's writing side: each write is sent whole (``sendall``)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self._sock = sock

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._sock.sendall(data)
        with memoryview(data) as view:
            return view.nbytes


class _Handler(BaseHTTPRequestHandler):
    """Answers the requests that have arrived on one connection, then hands it back to the
    dispatcher (kept alive) or closes it."""

    server: ViewerServer  # type: ignore[assignment]
    server_version = "grounded-view"
    sys_version = ""
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.connection = self.request
        with suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, True)
        self._reader = _DeadlineReader(self.connection, self.server.take_head(self.connection))
        self._buffered = io.BufferedReader(self._reader)
        self.rfile = self._buffered
        self.wfile = _Writer(self.connection)

    def handle(self) -> None:
        self.close_connection = True
        while True:
            self._reader.deadline = time.monotonic() + self.server.read_timeout
            self.handle_one_request()
            if self.close_connection:
                return
            self._reader.poll = True  # another request already here (pipelined)? else back to the dispatcher
            try:
                waiting = self._buffered.peek(1)
            except OSError:
                self.close_connection = True
                return
            finally:
                self._reader.poll = False
            if not waiting:
                return

    def _answer(self, method: str) -> None:
        try:
            response = self.server.app.handle(method, self.path, self.headers.items())
        except Exception as exc:  # a bug in a route must not leave the request unanswered
            log.error("%s %s failed: %s: %s", method, self.path, type(exc).__name__, exc)
            log.debug("traceback", exc_info=True)
            response = Response.error(500, f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}")
        self._send(response, method)

    def _send(self, response: Response, method: str, *, close: bool = False) -> None:
        self.connection.settimeout(self.server.write_timeout)
        self.send_response(response.status)
        for name, value in response.all_headers().items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(response.body)))
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(response.body)

    def do_GET(self) -> None:  # http.server's name
        self._answer("GET")

    def do_HEAD(self) -> None:
        self._answer("HEAD")

    def _refuse(self) -> None:
        self._answer(self.command)

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _refuse  # -> 405 from the app

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The errors ``http.server`` answers itself (bad request line, 414, 431, 501, ...): a JSON
        body like every other error, with the security headers, and the connection closed."""
        short = self.responses[code][0] if code in self.responses else "error"
        text = " ".join(str(message or short).split())
        log.debug("%s answered %d: %s", self.address_string(), code, text)
        response = Response.error(code, text)
        if getattr(self, "request_version", "HTTP/0.9") == "HTTP/0.9":
            self.request_version = "HTTP/1.0"  # an unparsable request line: still a status line and the headers
        if code < 200 or code in (HTTPStatus.NO_CONTENT, HTTPStatus.RESET_CONTENT, HTTPStatus.NOT_MODIFIED):
            response.body = b""
        self._send(response, getattr(self, "command", None) or "GET", close=True)

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)


class ViewerServer:
    """An HTTP server bound to ``(host, port)`` serving :class:`ViewerApp` (module doc): call
    :meth:`serve_forever` (in any thread), :meth:`shutdown` from another, then :meth:`server_close`."""

    def __init__(self, address: tuple[str, int], app: ViewerApp, *, workers: int = DEFAULT_WORKERS,
                 max_connections: int = MAX_CONNECTIONS, idle_timeout: float = IDLE_TIMEOUT,
                 read_timeout: float = READ_TIMEOUT, write_timeout: float = WRITE_TIMEOUT) -> None:
        if workers < 1 or max_connections < 1:
            raise ValueError(f"workers and max_connections must be >= 1, got {workers}, {max_connections}")
        self.app = app
        self.workers = workers
        self.max_connections = max_connections
        self.idle_timeout, self.read_timeout, self.write_timeout = idle_timeout, read_timeout, write_timeout
        family = socket.AF_INET6 if ":" in address[0] else socket.AF_INET
        self.socket = socket.socket(family, socket.SOCK_STREAM)
        try:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            self.socket.bind(address)
            self.socket.listen(LISTEN_BACKLOG)
        except OSError as exc:
            self.socket.close()
            if exc.errno == errno.EADDRINUSE:
                raise PortInUseError(
                    f"port {address[1]} on {address[0]} is in use (another program, or a viewer already running): "
                    f"choose another with --port N, or --port 0 for a free one"
                ) from None
            raise
        self.socket.setblocking(False)
        self.server_address = self.socket.getsockname()
        app.port = self.server_address[1]
        app.bound_host = str(self.server_address[0])
        self._jobs: queue.SimpleQueue[tuple[socket.socket, Any] | None] = queue.SimpleQueue()
        self._back: queue.SimpleQueue[tuple[socket.socket, Any]] = queue.SimpleQueue()
        self._open: set[socket.socket] = set()  # every accepted connection not closed yet
        self._heads: dict[socket.socket, bytes] = {}  # request heads read by the dispatcher, for the worker
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._closing = threading.Event()
        self._stopped = threading.Event()
        self._stopped.set()
        #: background threads of this server besides its workers (the query model warm-up), joined on close
        self.helpers: list[threading.Thread] = []
        self._threads = [threading.Thread(target=self._work, name=f"grounded-view-{i}", daemon=True)
                         for i in range(workers)]
        for thread in self._threads:
            thread.start()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        host = str(host)
        return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"

    @property
    def open_connections(self) -> int:
        return len(self._open)

    # -- the dispatcher --------------------------------------------------------------------------
    def serve_forever(self, poll_interval: float = 0.5) -> None:
        """Accept connections and hand each to a worker when a request arrives, until :meth:`shutdown`."""
        self._stopped.clear()
        selector = selectors.DefaultSelector()
        idle: dict[socket.socket, float] = {}  # silent connections -> since when (monotonic)
        partial: dict[socket.socket, tuple[bytearray, float]] = {}  # a request head arriving -> (bytes, deadline)
        listening = False
        paused_until = 0.0
        selector.register(self._wake_r, selectors.EVENT_READ, None)
        try:
            while not self._closing.is_set():
                now = time.monotonic()
                want = now >= paused_until and (len(self._open) < self.max_connections or bool(idle))
                if want != listening:
                    if want:
                        selector.register(self.socket, selectors.EVENT_READ, None)
                    else:
                        selector.unregister(self.socket)
                    listening = want
                for key, _ in selector.select(min(poll_interval, self.idle_timeout / 2)):
                    if key.fileobj is self.socket:
                        paused_until = self._accept(selector, idle)
                    elif key.fileobj is self._wake_r:
                        with suppress(OSError):
                            while self._wake_r.recv(4096):
                                pass
                    else:
                        conn = key.fileobj
                        assert isinstance(conn, socket.socket)
                        if conn not in idle:  # closed earlier in this batch (to admit a new one): skip it
                            continue
                        head = self._read_head(conn, partial)
                        if head is None:  # the head is still arriving: it waits here, not in a worker
                            continue
                        selector.unregister(conn)
                        del idle[conn]
                        partial.pop(conn, None)
                        if not head:  # _CLOSED
                            self._close(conn)
                            continue
                        with self._lock:
                            self._heads[conn] = head
                        self._jobs.put((conn, key.data))
                while True:  # kept-alive connections back from the workers
                    try:
                        conn, address = self._back.get_nowait()
                    except queue.Empty:
                        break
                    if self._closing.is_set():
                        self._close(conn)
                        continue
                    selector.register(conn, selectors.EVENT_READ, address)
                    idle[conn] = time.monotonic()
                now = time.monotonic()
                for conn, since in list(idle.items()):
                    waiting = partial.get(conn)
                    if (now > waiting[1]) if waiting is not None else (now - since > self.idle_timeout):
                        selector.unregister(conn)
                        del idle[conn]
                        partial.pop(conn, None)
                        self._close(conn)
        finally:
            for conn in list(idle):
                self._close(conn)
            selector.close()
            self._stopped.set()

    def _read_head(self, conn: socket.socket, partial: dict[socket.socket, tuple[bytearray, float]]) -> bytes | None:
        """Read what ``conn`` has sent without waiting: the request head once it is complete (its
        blank line arrived, or more than a request line may hold: http.server answers 414/431),
        :data:`_CLOSED` when the client closed or reset, else None (kept in ``partial`` until its
        deadline, :attr:`read_timeout` after its first byte). A slow client (slowloris) holds no worker."""
        try:
            data = conn.recv(65536, _DONTWAIT)
        except (BlockingIOError, InterruptedError):
            return None
        except OSError:
            return _CLOSED
        if not data:
            return _CLOSED
        buf, deadline = partial.get(conn) or (bytearray(), time.monotonic() + self.read_timeout)
        buf += data
        if b"\n\r\n" in buf or b"\n\n" in buf or len(buf) > _HEAD_LIMIT:
            return bytes(buf)
        partial[conn] = (buf, deadline)
        return None

    def take_head(self, conn: socket.socket) -> bytes:
        """The request head the dispatcher read from ``conn`` (once), for its worker."""
        with self._lock:
            return self._heads.pop(conn, b"")

    def _accept(self, selector: selectors.BaseSelector, idle: dict[socket.socket, float]) -> float:
        """Accept what the backlog holds, within :attr:`max_connections` (a new connection admitted
        over the bound closes the oldest silent one); returns until when accepting pauses (0: no pause)."""
        while True:
            if len(self._open) >= self.max_connections and not idle:
                return 0.0
            try:
                conn, address = self.socket.accept()
            except (BlockingIOError, InterruptedError):
                return 0.0
            except OSError as exc:
                if exc.errno in _ACCEPT_PAUSE:
                    log.warning("cannot accept a connection (%s): pausing for 0.1 s", exc.strerror)
                    self._close_oldest(selector, idle)  # make room
                    return time.monotonic() + 0.1
                log.debug("accept failed: %s", exc)
                return 0.0
            if len(self._open) >= self.max_connections:
                self._close_oldest(selector, idle)  # only once a new one is here: the slots stay full
            conn.setblocking(True)
            with self._lock:
                self._open.add(conn)
            selector.register(conn, selectors.EVENT_READ, address)
            idle[conn] = time.monotonic()

    def _close_oldest(self, selector: selectors.BaseSelector, idle: dict[socket.socket, float]) -> None:
        """Close the connection silent for longest (if any). It leaves ``idle`` and the selector first:
        an event of it still pending in the current batch is skipped by :meth:`serve_forever`."""
        if idle:
            oldest = min(idle, key=idle.__getitem__)
            selector.unregister(oldest)
            del idle[oldest]
            self._close(oldest)

    def _close(self, conn: socket.socket) -> None:
        with self._lock:
            self._open.discard(conn)
            self._heads.pop(conn, None)
        with suppress(OSError):
            conn.shutdown(socket.SHUT_RDWR)
        conn.close()

    def _wake(self) -> None:
        with suppress(OSError):
            self._wake_w.send(b"\0")

    # -- the workers -----------------------------------------------------------------------------
    def _work(self) -> None:
        while True:
            job = self._jobs.get()
            if job is None:
                return
            conn, address = job
            keep = False
            try:
                handler = _Handler(conn, address, self)  # type: ignore[arg-type]
                keep = not handler.close_connection
            except Exception:  # reported by handle_error; the worker serves on
                self.handle_error(conn, address)
            if keep and not self._closing.is_set():
                self._back.put((conn, address))
                self._wake()
            else:
                self._close(conn)
                self._wake()  # the dispatcher may be waiting for a free connection slot

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A dropped or timed-out connection is the client's business (debug log); anything else is
        one error line (the traceback at debug level)."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("connection from %s ended: %s", client_address[0], exc)
            return
        log.error("request from %s failed: %s: %s", client_address[0], type(exc).__name__, exc)
        log.debug("traceback", exc_info=True)

    # -- stopping --------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop :meth:`serve_forever` (called from another thread) and wait until it returned."""
        self._closing.set()
        self._wake()
        self._stopped.wait()

    def server_close(self) -> None:
        """Close the listening socket and every open connection, and stop the workers (waiting for each
        to finish its request, at most 10 s each)."""
        self._closing.set()
        self._wake()
        self._stopped.wait(5)
        self.socket.close()
        with self._lock:
            conns = list(self._open)
        for conn in conns:
            with suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for _ in self._threads:
            self._jobs.put(None)
        # workers (and the query model's warm-up) finish before the process exits: a daemon thread still
        # inside native code (rendering, ONNX Runtime loading the model) at interpreter exit aborts it
        # with "terminate called without an active exception"
        for thread in [*self._threads, *self.helpers]:
            if thread is not threading.current_thread():
                thread.join(10)
        self._wake_r.close()
        self._wake_w.close()

    def __enter__(self) -> ViewerServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server_close()


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def make_server(out: str | Path, host: str = "127.0.0.1", port: int = DEFAULT_PORT, *, embedder: Any = None,
                workers: int = DEFAULT_WORKERS, render_cache_bytes: int | None = None) -> ViewerServer:
    """A viewer of ``out`` bound to ``host:port`` (``port=0``: a free port; see ``.url``); call
    ``serve_forever()`` to run it. The index is opened (and checked) before the socket is bound; the
    MiniLM query model loads in a background thread meanwhile. A taken port raises
    :class:`PortInUseError`. ``render_cache_bytes``: bound of the rendered-page cache (default
    :data:`grounded.view.app.RENDER_CACHE_BYTES`; 0 disables it)."""
    kwargs = {} if render_cache_bytes is None else {"render_cache_bytes": render_cache_bytes}
    app = ViewerApp(out, embedder=embedder, loopback=_is_loopback(host), **kwargs)
    server = ViewerServer((host, port), app, workers=workers)
    if embedder is None and app.index.vector_column is not None:
        warm = threading.Thread(target=_warm_up, name="grounded-view-warm-up", daemon=True)
        warm.start()
        server.helpers.append(warm)
    return server


def _warm_up() -> None:
    """Load the query model in the background, so the first search does not wait for it."""
    from ..search import query_embedder

    try:
        query_embedder()
    except GroundedError as exc:  # reported again (and to the user) by the first search that needs it
        log.warning("the query model could not be loaded: %s", exc)
