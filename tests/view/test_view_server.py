"""``grounded view`` hardening (issue #34): strict Host and cross-site refusals, the security headers
on http.server's own error pages, no traceback when a client drops its connection, silent and
half-open connections closed and never holding the server, a bounded render cache, and a bounded
load test (200 concurrent requests over loopback)."""

from __future__ import annotations

import http.client
import json
import logging
import selectors
import socket
import struct
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from grounded.view import ViewerServer, make_server
from grounded.view.app import ViewerApp
from grounded.view.cache import BytesLRU
from tests.support.search_index import QUESTION, guideline_index
from tests.support.viewer import running_viewer

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "view-server")


def _serve(server: ViewerServer) -> Iterator[ViewerServer]:
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def server(out: Path) -> Iterator[ViewerServer]:
    yield from _serve(make_server(out, "127.0.0.1", 0))


def request(server: ViewerServer, target: str, headers: list[tuple[str, str]] | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET ``target`` with exactly ``headers`` (default: the right Host)."""
    port = server.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers if headers is not None else [("Host", f"127.0.0.1:{port}")]:
            conn.putheader(name, value)
        conn.endheaders()
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def raw(server: ViewerServer, data: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``data`` as is; the status, headers and body of the answer."""
    with socket.create_connection(server.server_address[:2], timeout=30) as sock:
        sock.sendall(data)
        response = http.client.HTTPResponse(sock)
        response.begin()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()


def test_host_header_must_be_a_loopback_name_with_the_served_port(server: ViewerServer) -> None:
    port = server.server_address[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"LOCALHOST:{port}", f"[::1]:{port}"):
        assert request(server, "/api/info", [("Host", host)])[0] == 200, host
    for host in ("127.0.0.1:evil", f"localhost:{port}@evil.example", "localhost:80@evil.example", "127.0.0.1",
                 f"127.0.0.1:{port + 1}", f"127.0.0.1:{port}.evil.example", f"evil.example:{port}", f"127.0.0.1:{port}:1",
                 f"127.0.0.1:0{port}0", f" 127.0.0.1:{port}x", ""):
        status, _, body = request(server, "/api/info", [("Host", host)])
        assert status == 403 and b"refused" in body, (host, status, body)
    assert request(server, "/api/info", [])[0] == 403  # no Host at all


def test_two_host_headers_are_refused(server: ViewerServer) -> None:
    good = f"127.0.0.1:{server.server_address[1]}"
    for hosts in ((good, "evil.example"), ("evil.example", good), (good, good)):
        status, _, body = request(server, "/api/info", [("Host", h) for h in hosts])
        assert status == 400 and b"more than one Host" in body, hosts


def test_cross_site_requests_to_the_api_are_refused(server: ViewerServer) -> None:
    host = ("Host", f"127.0.0.1:{server.server_address[1]}")
    hit = json.loads(request(server, f"/api/search?q={quote(QUESTION)}&k=1")[2])["hits"][0]
    image = hit["page_images"][0]["url"]
    for target in ("/api/info", image, hit["annotated_url"], hit["source_url"]):
        for site in ("cross-site", "same-site"):
            status, headers, body = request(server, target, [host, ("Sec-Fetch-Site", site)])
            assert status == 403 and not body.startswith((b"%PDF", b"\x89PNG")), (target, site)
            assert headers["cross-origin-resource-policy"] == "same-origin"
        for site in ("same-origin", "none"):
            assert request(server, target, [host, ("Sec-Fetch-Site", site)])[0] == 200, (target, site)
    status, headers, _ = request(server, image)
    assert status == 200 and headers["cross-origin-resource-policy"] == "same-origin"
    # the page itself may be opened from a link on another site; it is still not embeddable
    status, headers, _ = request(server, "/", [host, ("Sec-Fetch-Site", "cross-site")])
    assert status == 200 and "frame-ancestors 'none'" in headers["content-security-policy"]


@pytest.mark.parametrize("name, data, code", [
    ("unknown method", b"FOO / HTTP/1.1\r\nHost: h\r\n\r\n", 501),
    ("long request line", b"GET /" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: h\r\n\r\n", 414),
    ("long header", b"GET / HTTP/1.1\r\nHost: h\r\nX-Long: " + b"a" * 70_000 + b"\r\n\r\n", 431),
    ("many headers", b"GET / HTTP/1.1\r\n" + b"".join(b"X-%d: 1\r\n" % i for i in range(120)) + b"\r\n", 431),
    ("bad request line", b"GET\r\n\r\n", 400),
    ("bad version", b"GET / HTTP/1.x\r\n\r\n", 400),
    ("four words", b"GET / / HTTP/1.1\r\n\r\n", 400),
])
def test_http_servers_own_error_pages_carry_the_security_headers(server: ViewerServer, name: str, data: bytes, code: int) -> None:
    status, headers, body = raw(server, data)
    assert status == code, name
    for header in ("content-security-policy", "x-content-type-options", "cross-origin-resource-policy", "referrer-policy"):
        assert header in headers, (name, header)
    assert headers["content-type"].startswith("application/json") and json.loads(body)["status"] == code


def test_a_dropped_connection_prints_no_traceback(server: ViewerServer, capfd: pytest.CaptureFixture[str],
                                                  caplog: pytest.LogCaptureFixture) -> None:
    hit = json.loads(request(server, f"/api/search?q={quote(QUESTION)}&k=1")[2])["hits"][0]
    port = server.server_address[1]
    capfd.readouterr()
    with caplog.at_level(logging.DEBUG, logger="grounded.view"):
        for target in (hit["annotated_url"], hit["page_images"][0]["url"], hit["source_url"]) * 3:
            sock = socket.create_connection(("127.0.0.1", port))
            sock.sendall(f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            sock.close()  # a reset, while the server reads or writes
        assert request(server, "/api/info")[0] == 200  # still serving
        deadline = time.monotonic() + 60
        while server.open_connections and time.monotonic() < deadline:  # every dropped request handled
            time.sleep(0.05)
    err = capfd.readouterr().err
    assert "Traceback" not in err and "BrokenPipe" not in err and "ConnectionReset" not in err, err
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "grounded.view"], caplog.text


def test_silent_connections_are_closed_and_never_block_a_request(out: Path) -> None:
    app = ViewerApp(out)
    for server in _serve(ViewerServer(("127.0.0.1", 0), app, workers=2, max_connections=8, idle_timeout=1.0,
                                      read_timeout=1.0)):
        address = server.server_address[:2]
        silent = [socket.create_connection(address, timeout=10) for _ in range(40)]  # never send a byte
        slow = socket.create_connection(address, timeout=10)
        slow.sendall(b"GET /api/info HTTP/1.1\r\nHo")  # a request that never ends
        started = time.monotonic()
        status, _, _ = request(server, "/static/app.css")
        assert status == 200 and time.monotonic() - started < 5  # silent ones hold no worker; the oldest are closed
        assert server.open_connections <= 8
        for sock in [*silent[-4:], slow]:  # even the newest: closed after the idle/read timeout
            sock.settimeout(10)
            try:
                assert sock.recv(1) == b"", "the server answered a request that never ended"
            except ConnectionResetError:
                pass  # closed (with a reset)
            except TimeoutError:
                pytest.fail("the server kept a silent connection open")
        for sock in [*silent, slow]:
            sock.close()
        assert request(server, "/static/app.css")[0] == 200


def test_keep_alive_connections_are_reused(server: ViewerServer) -> None:
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=30)
    try:
        for _ in range(5):
            conn.request("GET", "/static/app.css")
            response = conn.getresponse()
            assert response.status == 200 and response.read()
        assert conn.sock is not None  # the same connection served all five
    finally:
        conn.close()


def test_the_render_cache_stays_within_its_byte_bound(out: Path) -> None:
    probe = ViewerApp(out)
    hits = json.loads(probe.handle("GET", f"/api/search?q={quote(QUESTION)}&k=20", [("Host", "127.0.0.1")]).body)["hits"]
    urls = [image["url"] for hit in hits for image in hit["page_images"]][:8]
    sizes = [len(probe.handle("GET", url, [("Host", "127.0.0.1")]).body) for url in urls]
    assert len(urls) >= 4 and probe.renders.nbytes == sum(sizes)  # the default bound holds them all
    bound = int(max(sizes) * 2.5)
    app = ViewerApp(out, render_cache_bytes=bound)
    for _ in range(3):
        for url, size in zip(urls, sizes):
            response = app.handle("GET", url, [("Host", "127.0.0.1")])
            assert response.status == 200 and len(response.body) == size
            assert 0 < app.renders.nbytes <= bound
    assert len(app.renders) < len(urls)  # the least recently used were evicted
    hits_before = app.renders.hits
    assert app.handle("GET", urls[-1], [("Host", "127.0.0.1")]).status == 200
    assert app.renders.hits == hits_before + 1  # the last one is still cached
    off = ViewerApp(out, render_cache_bytes=0)
    assert off.handle("GET", urls[0], [("Host", "127.0.0.1")]).status == 200 and off.renders.nbytes == 0


def test_bytes_lru() -> None:
    cache = BytesLRU(10)
    cache.put("a", b"1234")
    cache.put("b", b"5678")
    assert cache.get("a") == b"1234"  # a is now the most recent
    cache.put("c", b"90ab")
    assert cache.get("b") is None and cache.get("a") == b"1234" and cache.nbytes == 8
    cache.put("big", b"x" * 11)  # larger than the bound: not kept, nothing evicted
    assert cache.get("big") is None and len(cache) == 2
    cache.put("a", b"123456")
    assert cache.nbytes == 10 and cache.get("a") == b"123456"
    with pytest.raises(ValueError):
        BytesLRU(-1)


def test_load_200_concurrent_requests(out: Path) -> None:
    """200 clients connect at once (loopback) to ``grounded view`` in its own process: every request
    is answered (no reset, no timeout) and the 99th percentile latency stays under 2 s."""
    targets = ["/", "/static/app.js", "/static/app.css", "/api/info"]
    with running_viewer(out) as viewer:
        port = int(viewer.url.rstrip("/").rsplit(":", 1)[1])
        for target in targets:  # warm: the first /api/info opens the table
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", target)
            assert conn.getresponse().status == 200
            conn.close()
        n = 200
        barrier = threading.Barrier(n)
        latencies: list[float] = []
        errors: list[str] = []

        def client(i: int) -> None:
            barrier.wait()
            started = time.monotonic()
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                conn.request("GET", targets[i % len(targets)])
                response = conn.getresponse()
                body = response.read()
                if response.status != 200 or not body:
                    errors.append(f"{response.status}")
                else:
                    latencies.append(time.monotonic() - started)
            except OSError as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
            finally:
                conn.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    latencies.sort()
    p99 = latencies[int(0.99 * (len(latencies) - 1))] if latencies else float("inf")
    assert not errors and len(latencies) == n, (len(errors), errors[:5])
    assert p99 < 2.0, f"p99 {p99:.2f} s, max {latencies[-1]:.2f} s"
    # a quiet run: the viewer itself prints nothing on stderr (the query model's "Loading weights" bar is
    # the model loader's, silenced by grounded.runtime.quiet)
    printed = [line for line in viewer.stderr.splitlines() if "Loading weights" not in line]
    assert not printed, viewer.stderr


class _GatedSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The dispatcher's selector, whose ``select`` waits while ``gate`` is clear: the dispatcher is
    held as SIGSTOP holds it, so every event the test makes meanwhile arrives in one batch."""

    gate = threading.Event()
    held = threading.Event()

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if not self.gate.is_set():
            self.held.set()
            self.gate.wait(30)
            time.sleep(0.2)  # the bytes sent meanwhile have reached the sockets
        return super().select(timeout)


def test_closing_the_oldest_silent_socket_with_an_event_in_the_same_batch(
    out: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # issue 42 item 9: all slots full, one batch holding a new connection and a byte on every open one:
    # accepting closed the oldest silent socket, then its own event unregistered the closed socket:
    # ValueError: Invalid file descriptor: -1, and the dispatcher died
    monkeypatch.setattr(selectors, "DefaultSelector", _GatedSelector)
    _GatedSelector.gate.set()
    server = ViewerServer(("127.0.0.1", 0), ViewerApp(out), workers=2, max_connections=4, idle_timeout=30.0,
                          read_timeout=2.0)
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            server.serve_forever(poll_interval=0.05)
        except BaseException as exc:  # noqa: BLE001 - the test reports what killed the loop
            errors.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    address = server.server_address[:2]
    socks = []
    try:
        for _ in range(4):  # fill every slot with a silent connection
            socks.append(socket.create_connection(address, timeout=10))
        time.sleep(0.5)
        # every slot holds one (a silent connection was closed while no new one waited: 3 of 4)
        assert server.open_connections == 4
        _GatedSelector.held.clear()
        _GatedSelector.gate.clear()  # "SIGSTOP"
        assert _GatedSelector.held.wait(10)
        socks.append(socket.create_connection(address, timeout=10))  # one new client...
        for sock in socks[:4]:
            sock.sendall(b"G")  # ...and a byte on every open socket
        _GatedSelector.gate.set()  # "SIGCONT"
        time.sleep(0.5)
        assert thread.is_alive() and not errors, errors
        port = address[1]
        status, _, _ = request(server, "/static/app.css", [("Host", f"127.0.0.1:{port}")])
        assert status == 200 and thread.is_alive() and not errors, errors
    finally:
        _GatedSelector.gate.set()
        for sock in socks:
            sock.close()
        server.shutdown()
        server.server_close()
    assert not errors, errors


def test_slow_clients_hold_no_worker(out: Path) -> None:
    # issue 42 item 9: under silent and slowloris sockets, the first normal request waited 20 s: each
    # slow request head held a worker until the read timeout
    app = ViewerApp(out)
    for server in _serve(ViewerServer(("127.0.0.1", 0), app, workers=2, max_connections=64, idle_timeout=30.0,
                                      read_timeout=6.0)):
        address = server.server_address[:2]
        silent = [socket.create_connection(address, timeout=10) for _ in range(20)]
        slow = [socket.create_connection(address, timeout=10) for _ in range(8)]
        for sock in slow:
            sock.sendall(b"GET /api/info HTTP/1.1\r\n")
        time.sleep(0.3)
        for sock in slow:
            sock.sendall(b"X-Slow: 1\r\n")  # still no blank line
        started = time.monotonic()
        status, _, _ = request(server, "/static/app.css")
        assert status == 200 and time.monotonic() - started < 2.0, time.monotonic() - started
        for sock in slow:  # a head completed late is still answered, within the read deadline
            sock.sendall(b"Host: 127.0.0.1:%d\r\n\r\n" % address[1])
        for sock in slow:
            response = http.client.HTTPResponse(sock)
            response.begin()
            assert response.status == 200
        for sock in [*silent, *slow]:
            sock.close()
