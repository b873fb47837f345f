"""``grounded view``: the viewer's HTTP routes on a real server over a real ingest output -- search,
highlighted page PNGs, the annotated PDF -- and its confinement: read-only, no path traversal
(plain or percent-encoded), only indexed PDFs, loopback Host names only."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pyarrow.compute as pc
import pytest

from grounded.search import DEFAULT_MODE
from grounded.view import ViewerServer, make_server
from tests.support.data import shared
from tests.support.search_index import (
    ANSWER_PAGE,
    QUESTION,
    derived_index,
    guideline_index,
    highlight_coverage,
    png_pixels,
    span_rects,
    table_rows,
    tree_state,
)

#: searches the index built once per run: its hits' focus reads the trees ingest left in the session's parse cache
pytestmark = pytest.mark.shared_parse_cache


@pytest.fixture(scope="module")
def out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return guideline_index(tmp_path_factory, "view")


def _serve(out: Path) -> Iterator[ViewerServer]:
    server = make_server(out, "127.0.0.1", 0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def server(out: Path) -> Iterator[ViewerServer]:
    yield from _serve(out)


def get(server: ViewerServer, target: str, *, host: str | None = None, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """A request with ``target`` sent exactly as written (no client-side normalization of ``..``)."""
    conn = http.client.HTTPConnection(*server.server_address[:2], timeout=300)
    try:
        conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host or f"127.0.0.1:{server.server_address[1]}")
        conn.endheaders()
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def search_json(server: ViewerServer, question: str = QUESTION, k: int = 3) -> dict:
    status, headers, body = get(server, f"/api/search?q={quote(question)}&k={k}")
    assert status == 200 and headers["content-type"].startswith("application/json"), body
    return json.loads(body)


def test_page_assets_and_info(server: ViewerServer, out: Path) -> None:
    status, headers, body = get(server, "/")
    assert status == 200 and b'id="q"' in body and headers["content-type"].startswith("text/html")
    assert "default-src 'self'" in headers["content-security-policy"]
    for name, kind in (("app.js", "text/javascript"), ("app.css", "text/css")):
        status, headers, body = get(server, f"/static/{name}")
        assert status == 200 and headers["content-type"].startswith(kind) and body
        assert b"http://" not in body and b"https://" not in body  # no CDN, nothing fetched from elsewhere
    info = json.loads(get(server, "/api/info")[2])
    assert info["documents"] == 2 and info["text_index"] and info["vectors"] and info["default_mode"] == DEFAULT_MODE
    assert list(info["configs"].values()) == [table_rows(out).num_rows]


def test_search_page_image_and_annotated_pdf(server: ViewerServer, out: Path) -> None:
    import pymupdf

    before = tree_state(out)
    data = search_json(server)
    hit = data["hits"][0]
    assert data["mode"] == DEFAULT_MODE and hit["pages"] == [ANSWER_PAGE] and hit["heading_path"]
    hybrid = json.loads(get(server, f"/api/search?q={quote(QUESTION)}&k=3&mode=hybrid")[2])
    assert hybrid["mode"] == "hybrid" and hybrid["hits"][0]["pages"] == [ANSWER_PAGE]
    assert [p["page"] for p in hit["page_images"]] == hit["pages"]
    status, headers, png = get(server, hit["page_images"][0]["url"])
    assert status == 200 and headers["content-type"] == "image/png"
    pixels = png_pixels(png)
    inside, outside = highlight_coverage(pixels, span_rects(hit["boxes"], ANSWER_PAGE, pixels.shape[1], pixels.shape[0]))
    assert inside > 0.6 and outside < 0.01, (inside, outside)
    status, headers, pdf = get(server, hit["annotated_url"])
    assert status == 200 and headers["content-type"] == "application/pdf"
    assert headers["content-disposition"].startswith("attachment") and "guideline.highlighted.pdf" in headers["content-disposition"]
    with pymupdf.open(stream=pdf, filetype="pdf") as doc:
        annots = [a for a in doc[ANSWER_PAGE - 1].annots() if a.type[1] == "Highlight"]
        assert {a.info["title"] for a in annots} == {hit["chunk_id"]}
    status, _, original = get(server, hit["source_url"])
    assert status == 200 and original == Path(hit["source_path"]).read_bytes()
    assert tree_state(out) == before  # the viewer never writes into OUT


def test_bad_requests(server: ViewerServer) -> None:
    hit = search_json(server, k=1)["hits"][0]
    cid = quote(hit["chunk_id"])
    assert get(server, "/api/search?q=%20%20")[0] == 400
    assert get(server, f"/api/search?q={quote(QUESTION)}&mode=fuzzy")[0] == 400
    assert get(server, f"/api/search?q={quote(QUESTION)}&k=1000")[0] == 400
    assert get(server, f"/api/page.png?id={cid}&page=1")[0] == 404  # the chunk is not on page 1
    assert get(server, f"/api/page.png?id={cid}&page=x")[0] == 400
    assert get(server, "/api/page.png?id=nope&page=4")[0] == 404
    assert get(server, "/api/annotated.pdf?id=nope")[0] == 404
    assert get(server, "/api/nothing")[0] == 404
    assert get(server, "/api/info", method="POST")[0] == 405


@pytest.mark.parametrize("target", [
    "/static/../../../../etc/passwd",
    "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
    "/static/%2E%2E%2F%2E%2E%2Fetc%2Fpasswd",
    "/%2e%2e/%2e%2e/etc/passwd",
    "/static/..%5c..%5cetc%5cpasswd",
])
def test_path_traversal_is_refused(server: ViewerServer, target: str) -> None:
    status, _, body = get(server, target)
    assert status == 403 and b"root:" not in body


def test_only_indexed_pdfs_are_served(server: ViewerServer, out: Path) -> None:
    indexed = next(p for p in table_rows(out).column("source_path").to_pylist() if p.endswith("guideline.pdf"))
    assert get(server, f"/api/source.pdf?path={quote(indexed, safe='')}")[0] == 200
    other = shared("long", "cermine_web_example3_clinsci.pdf")  # a real PDF that is not in the index
    sneaky = str(Path(indexed).parent / ".." / Path(indexed).parent.name / Path(indexed).name)
    for path in (str(other), sneaky, "/etc/passwd", str(out / "documents.parquet")):
        status, _, body = get(server, f"/api/source.pdf?path={quote(path, safe='')}")
        assert status == 404 and not body.startswith(b"%PDF"), path  # exact match with an indexed path only
    assert get(server, f"/static/{quote(str(other), safe='')}")[0] == 404


def test_only_loopback_host_names(server: ViewerServer) -> None:
    port = server.server_address[1]
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        assert get(server, "/api/info", host=host)[0] == 200
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"):
        assert get(server, "/api/info", host=host)[0] == 403


def test_a_changed_pdf_is_refused_not_drawn(out: Path, tmp_path: Path) -> None:
    rows = table_rows(out)
    original = next(p for p in rows.column("source_path").to_pylist() if p.endswith("guideline.pdf"))
    copy = tmp_path / "guideline.pdf"
    copy.write_bytes(Path(original).read_bytes())
    moved = rows.set_column(rows.schema.get_field_index("source_path"), "source_path",
                            pc.replace_substring(rows.column("source_path"), original, str(copy)))
    for server in _serve(derived_index(tmp_path / "moved", moved)):
        hit = search_json(server, k=1)["hits"][0]
        assert get(server, hit["page_images"][0]["url"])[0] == 200
        copy.write_bytes(copy.read_bytes() + b"\n% a new version\n")
        status, _, body = get(server, hit["page_images"][0]["url"])
        assert status == 409 and b"changed since it was indexed" in body
        assert get(server, hit["source_url"])[0] == 409
        assert search_json(server, k=1)["hits"][0]["source_missing"] is False
        copy.unlink()  # a deleted input: its hits are marked (the page shows "no longer on disk")
        gone = search_json(server, k=1)["hits"][0]
        assert gone["source_missing"] is True and get(server, gone["page_images"][0]["url"])[0] == 409


def test_view_cli_errors_are_one_line(out: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    from grounded.cli.main import main

    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:
        cases = [
            ([str(tmp_path / "missing")], "no such folder"),
            ([str(tmp_path)], "not an ingest output folder"),
            ([str(out), "--port", "70000"], "--port must be in 0..65535"),
            ([str(out), "--port", str(taken.getsockname()[1])], f"port {taken.getsockname()[1]} on 127.0.0.1 is in use"),
            ([str(out), "--port", str(taken.getsockname()[1])], "choose another with --port N"),
            ([str(out), "--cache-mb", "-1"], "--cache-mb must be in 0..65536"),
        ]
        for args, message in cases:
            assert main(["view", *args]) == 1
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and message in err and "Traceback" not in err, err
    finally:
        taken.close()


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda m: m["lancedb"].update(version="x"), '"lancedb.version" must be an integer'),
        (lambda m: m["lancedb"].update(version=99), "version 99"),
        (lambda m: m.update(lancedb=[1]), "lancedb"),
    ],
    ids=["version-not-int", "missing-version", "lancedb-not-object"],
)
def test_view_on_a_damaged_output_says_one_typed_line(
    tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str], damage: Any, said: str
) -> None:
    """Issue 34.15: ``grounded view`` on an output whose manifest is damaged answers with the typed
    message in one line and exit code 1, before binding a port -- never a traceback."""
    import shutil

    from grounded.cli.main import main

    out = guideline_index(tmp_path_factory, "view-damaged")
    manifest = json.loads((out / "manifest.json").read_text())
    damage(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))
    try:
        assert main(["view", str(out), "--port", "0"]) == 1
    finally:
        shutil.rmtree(out)
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err, captured.err
    assert captured.err.startswith("grounded view: error:") and said in captured.err, captured.err
    assert "re-run `grounded ingest`" in captured.err and "serving" not in captured.out
