"""``gemini`` backend: the thesis prompt, reply parsing that survives broken JSON, ``box_2d``
conversion on the real recorded cookbook reply, and a real parse of a shared PDF re-encoded as
Listing A.1 replies (fenced, one page with broken JSON) served by a fake client -> the same
elements and boxes back -> PDF box cross-check -> chunks. No network: the client is injected.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pymupdf
import pytest
from google.genai import errors as genai_errors

from grounded.errors import MissingCredentialsError, RemoteServiceError
from grounded.parsers import get_parser
from grounded.parsers.backends.gemini import (
    GEMINI_PROMPT,
    GeminiParser,
    box_2d_to_box,
    gemini_elements,
    pages_to_tree,
    parse_model_json,
)
from grounded.parsers.hierarchy import assign_heading_levels, group_lists
from grounded.runtime.cloud import RetryPolicy
from tests.support.backends.gemini import (
    NO_WAIT,
    FakeClient,
    T,
    _rate_limited,
    gemini_reply,
    httpx_timeout,
    markdown_table,
)
from tests.support.cloud_fixtures import (
    RAW,
    RefElement,
    assert_same_as_reference,
    box_text_distances,
    check_chunks,
    norm,
    reference_elements,
)
from tests.support.data import REPO, shared


@pytest.fixture(scope="module")
def clinsci_refs(clinsci_pdf: Path) -> list[RefElement]:
    return reference_elements(clinsci_pdf, [1, 2])






# -- the prompt --------------------------------------------------------------------------------
def test_prompt_is_listing_a1_verbatim():
    seeds = sorted((REPO / ".." / "shared" / "seeds").glob("000_*.txt"))
    if not seeds:
        pytest.skip("thesis text not available")
    thesis = seeds[0].read_text(encoding="utf-8")
    first = thesis[thesis.index("<system_role>") : thesis.index("</bounding_boxes>") + len("</bounding_boxes>")]
    second = thesis[thesis.index("<extraction_rules>") : thesis.index("</output_schema>") + len("</output_schema>")]
    assert first + "\n\n" + second == GEMINI_PROMPT
    parser = GeminiParser(client=FakeClient({}))
    assert '"page_number": 7.' in parser.prompt_for(7) and "{*}" not in parser.prompt_for(7)


# -- reply parsing -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        '{"layout_elements": [{"category": "text", "content": "a"}]}',
        '```json\n{"layout_elements": [{"category": "text", "content": "a"}]}\n```',
        'Here is the result:\n```\n{"layout_elements": [{"category": "text", "content": "a",},],}\n```\nDone.',
        '{"layout_elements": [{"category": "text", "content": "a"}, {"category": "formula", "content": "x^2',
        '[{"category": "text", "content": "a"}]',
    ],
)
def test_replies_that_break_json_still_parse(reply: str):
    elements = gemini_elements(parse_model_json(reply))
    assert elements[0] == {"category": "text", "content": "a"}
    assert len(elements) == 1


def test_latex_escapes_and_raw_newlines_are_repaired():
    reply = '{"layout_elements": [{"category": "formula", "content": "\\alpha + \\sum_i x_i\nnext"}, ]}'
    (element,) = gemini_elements(parse_model_json(reply))
    assert element["content"] == "\\alpha + \\sum_i x_i\nnext"
    root = pages_to_tree([{"page": 1, "response_text": '{"layout_elements": [{"category": "formula", '
                           '"content": "\\\\frac{a}{b}", "bbox": {"box_2d": [10, 10, 20, 20]}}]}'}])
    assert root.children[0].content == "\\frac{a}{b}"


def test_unusable_reply_is_reported_not_silent(caplog):
    root = pages_to_tree([{"page": 3, "response_text": "I cannot help with that."}])
    assert root.children == [] and root.metadata["unparsed_pages"] == [3]
    assert "page 3" in caplog.text
    with pytest.raises(ValueError):
        parse_model_json("")


def test_recorded_cookbook_reply_boxes_are_y_first_per_mille():
    sample = json.loads(shared("native", "gemini", "cookbook_spatial_understanding_box2d_responses.json").read_text())
    reply = sample["responses"][0]["raw_model_text"]
    raw = gemini_elements(parse_model_json(reply))
    root = pages_to_tree([{"page": 1, "response_text": reply}])
    assert len(root.children) == len(raw) == 13
    for node, element in zip(root.children, raw):
        y0, x0, y1, x1 = element["box_2d"]
        (box,) = node.geom
        assert (box.left, box.top, box.right, box.bottom) == pytest.approx((x0 / 1000, y0 / 1000, x1 / 1000, y1 / 1000))
        # an object detector's labels are no document categories
        assert node.type == T.MISSING and node.metadata["native_label"] == element["label"]


def test_box_2d_edge_cases():
    assert box_2d_to_box([500, 100, 400, 300], 2).top == pytest.approx(0.4)  # swapped y
    assert box_2d_to_box([0, 0, 1000, 1200], 1).right == 1.0  # clamped
    assert box_2d_to_box([1, 2, 3], 1) is None
    assert box_2d_to_box([5, 5, 5, 9], 1) is None  # empty
    assert box_2d_to_box(["a", 1, 2, 3], 1) is None


def test_categories_levels_lists_and_tables():
    reply = json.dumps({"layout_elements": [
        {"category": "section_header", "heading_level": 2, "content": "2. Methods", "bbox": {"page_number": 1, "box_2d": [100, 100, 120, 500]}},
        {"category": "list_item", "content": "- first", "bbox": {"page_number": 1, "box_2d": [130, 100, 140, 500]}},
        {"category": "list_item", "content": "- second", "bbox": {"page_number": 1, "box_2d": [140, 100, 150, 500]}},
        {"category": "table", "content": "| a | b |\n|---|---|\n| 1 | 2 |", "bbox": {"page_number": 1, "box_2d": [200, 100, 300, 500]}},
        {"category": "page_footer", "content": "12", "bbox": {"page_number": 1, "box_2d": [950, 480, 960, 520]}},
        {"category": "chart", "content": "", "bbox": {"page_number": 1, "box_2d": [400, 100, 600, 500]}},
    ]})
    root = pages_to_tree([{"page": 1, "response_text": reply}])
    assert group_lists(root) == 1  # the transform hands items over; post-processing groups them
    assign_heading_levels(root)
    header, lst, table, footer, chart = root.children
    assert header.type == T.SECTION_HEADER and header.metadata["native_level"] == 2
    assert (header.metadata["level"], header.metadata["level_source"]) == (2, "backend")
    assert lst.type == T.LIST and [c.content for c in lst.children] == ["first", "second"]
    assert lst.geom[0].top == pytest.approx(0.13) and lst.geom[0].bottom == pytest.approx(0.15)
    assert [[c.content for c in r.children] for r in table.children] == [["a", "b"], ["1", "2"]]
    assert table.children[0].metadata["header"] is True
    assert footer.type == T.PAGE_FOOTER
    assert chart.type == T.MISSING and chart.metadata["native_label"] == "chart"


# -- credentials, registry ---------------------------------------------------------------------
def test_missing_api_key_names_the_variable(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    with pytest.raises(MissingCredentialsError) as err:
        get_parser("gemini")
    assert "GEMINI_API_KEY" in str(err.value) and "\n" not in str(err.value)


def test_api_key_from_the_environment_builds_a_real_client(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.setenv("GOOGLE_API_KEY", "test-key-not-used")
    from google import genai

    parser = get_parser("gemini", timeout=30)
    assert isinstance(parser, GeminiParser) and isinstance(parser.client, genai.Client)
    assert parser.version().startswith("gemini-2.5-flash")




def test_rate_limits_and_server_errors_are_retried_with_growing_backoff(clinsci_pdf: Path):
    failures = [_rate_limited(), genai_errors.ServerError(503, {"error": {"code": 503, "message": "overloaded"}})]
    client = FakeClient({1: '{"layout_elements": []}'}, failures)
    waits: list[float] = []
    parser = GeminiParser(client=client, pages=[1], max_workers=1, sleep=waits.append,
                          retry=RetryPolicy(max_attempts=4, initial_delay=1.5, multiplier=2.0, jitter=0.0))
    native = parser.record_native(clinsci_pdf)
    assert len(client.models.calls) == 3 and waits == [1.5, 3.0]
    assert native["pages"][0]["finish_reason"] == "STOP"


def test_persisting_quota_error_becomes_a_remote_service_error(clinsci_pdf: Path):
    client = FakeClient({1: "{}"}, [_rate_limited() for _ in range(5)])
    parser = GeminiParser(client=client, pages=[1], max_workers=1, retry=NO_WAIT)
    with pytest.raises(RemoteServiceError) as err:
        parser.run(clinsci_pdf)
    message = str(err.value)
    assert "HTTP 429" in message and "quota" in message and "after 3 attempts" in message
    assert clinsci_pdf.name in message and "page 1" in message and "\n" not in message


def test_bad_credentials_fail_at_once(clinsci_pdf: Path):
    denied = genai_errors.ClientError(403, {"error": {"code": 403, "message": "API key not valid", "status": "PERMISSION_DENIED"}})
    client = FakeClient({1: "{}"}, [denied])
    with pytest.raises(RemoteServiceError, match="HTTP 403"):
        GeminiParser(client=client, pages=[1], retry=NO_WAIT).run(clinsci_pdf)
    assert len(client.models.calls) == 1


# -- re-encoded real parse ---------------------------------------------------------------------
def test_requests_send_each_page_image_with_its_prompt(clinsci_pdf: Path, clinsci_refs):
    replies = {p: gemini_reply([r for r in clinsci_refs if r.page == p]) for p in (1, 2)}
    client = FakeClient(replies)
    progress: list[tuple[int, int]] = []
    GeminiParser(client=client, pages=[1, 2], dpi=72, progress=lambda d, t: progress.append((d, t))).run(clinsci_pdf)
    assert progress == [(0, 2), (1, 2), (2, 2)]  # the CLI's progress callback
    calls = sorted(client.models.calls, key=lambda c: c["page"])
    assert [c["page"] for c in calls] == [1, 2]
    with pymupdf.open(clinsci_pdf) as doc:
        for call in calls:
            image_part, prompt = call["contents"]
            assert call["model"] == "gemini-2.5-flash" and prompt.startswith("<system_role>")
            assert image_part.inline_data.mime_type == "image/png"
            pix = pymupdf.Pixmap(image_part.inline_data.data)
            page = doc[call["page"] - 1]
            assert abs(pix.width - page.rect.width) <= 1 and abs(pix.height - page.rect.height) <= 1
            assert call["config"].response_mime_type == "application/json"


def test_reencoded_replies_give_the_same_elements_and_boxes(clinsci_pdf: Path, clinsci_refs):
    replies = {1: gemini_reply([r for r in clinsci_refs if r.page == 1]),
               2: gemini_reply([r for r in clinsci_refs if r.page == 2], broken=True)}
    parser = GeminiParser(client=FakeClient(replies), pages=[1, 2], **RAW)
    native = parser.record_native(clinsci_pdf)
    assert native["pages"][1]["response_text"].startswith("```json") and not native["pages"][1]["response_text"].endswith("}")
    root = parser.parse_native(native, clinsci_pdf).root
    assert_same_as_reference(root, clinsci_refs, tolerance=0.0005)  # box_2d is quantized to 1/1000
    assert [p["page"] for p in root.metadata["pages"] if p["status"] != "empty"] == [1, 2]


def test_text_inside_each_box_matches_the_element(clinsci_pdf: Path, clinsci_refs):
    replies = {p: gemini_reply([r for r in clinsci_refs if r.page == p]) for p in (1, 2)}
    parser = GeminiParser(client=FakeClient(replies), pages=[1, 2], **RAW)
    distances = box_text_distances(parser.run(clinsci_pdf).root, clinsci_pdf)
    assert len(distances) >= 20
    assert statistics.mean(d for _, d in distances) < 0.03
    # a box may also catch overlapping text (page footers print over each other here)
    assert sum(d < 0.1 for _, d in distances) / len(distances) >= 0.9, sorted(distances, key=lambda x: -x[1])[:3]


def test_reencoded_replies_to_chunks_with_boxes(clinsci_pdf: Path, clinsci_refs):
    replies = {p: gemini_reply([r for r in clinsci_refs if r.page == p], broken=p == 2) for p in (1, 2)}
    out = GeminiParser(client=FakeClient(replies), pages=[1, 2]).run(clinsci_pdf)
    root = out.root
    assert root.metadata["parser"] == "gemini" and root.metadata["page_count"] == 13
    table = next(r for r in clinsci_refs if r.type == T.TABLE)
    assert markdown_table(table.rows).splitlines()[0] in out.markdown
    texts = [n for n in root.walk() if n.type == T.PARAGRAPH and n.geom]
    assert sum(bool(b.spans) for n in texts for b in n.geom) / len(texts) > 0.9
    chunks = check_chunks(root, clinsci_pdf)
    assert {p for c in chunks for p in c.metadata["pages"]} == {1, 2}
    assert norm(texts[3].content)[:60] in norm(" ".join(c.body for c in chunks))


# -- shared cloud helpers (used by gemini, llamaparse, documentai) -----------------------------------
def test_backoff_grows_is_capped_and_jitter_stays_in_bounds():
    import random

    policy = RetryPolicy(initial_delay=1.0, multiplier=2.0, max_delay=5.0, jitter=0.1)
    rng = random.Random(0)
    for attempt, base in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        assert base * 0.9 <= policy.delay(attempt, rng) <= base * 1.1
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


def test_timeouts_are_retried_and_programming_errors_are_not():
    from grounded.runtime.cloud import call_with_retries, status_code_of

    calls = []

    def flaky():
        calls.append(1)
        if len(calls) < 3:
            raise httpx_timeout()
        return "ok"

    assert call_with_retries(flaky, backend="b", source="f.pdf", policy=NO_WAIT, sleep=lambda s: None) == "ok"
    with pytest.raises(TypeError):  # a bug is not a service failure: no retry, no wrapping
        call_with_retries(lambda: (_ for _ in ()).throw(TypeError("bad arg")), backend="b", source="f.pdf", policy=NO_WAIT)
    with pytest.raises(RemoteServiceError, match="TimeoutError"):
        call_with_retries(lambda: (_ for _ in ()).throw(TimeoutError("read timed out")), backend="b", source="f.pdf",
                          policy=NO_WAIT, sleep=lambda s: None)
    assert status_code_of(_rate_limited()) == 429




def test_importing_the_cloud_backends_imports_no_sdk():
    import subprocess
    import sys

    code = (
        "import sys\n"
        "import grounded.parsers.backends.gemini, grounded.parsers.backends.llamaparse\n"
        "import grounded.parsers.backends.documentai, grounded.parsers.backends.unstructured\n"
        "bad = [m for m in ('google.genai', 'llama_cloud_services', 'google.cloud.documentai', 'unstructured', 'torch')"
        " if m in sys.modules]\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize(
    ("name", "needs"),
    [
        ("gemini", "GEMINI_API_KEY"),
        ("llamaparse", "LLAMA_CLOUD_API_KEY"),
        ("documentai", "DOCUMENTAI_PROJECT_ID"),
        ("unstructured", "pip install 'grounded[unstructured]'"),
    ],
)
def test_cli_reports_a_missing_credential_or_extra_in_one_line(name, needs, clinsci_pdf: Path, tmp_path: Path,
                                                                 monkeypatch, capsys):
    import importlib.util

    from grounded.cli.main import main

    if name == "unstructured" and importlib.util.find_spec("unstructured") is not None:
        pytest.skip("unstructured is installed")
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "LLAMA_CLOUD_API_KEY", "DOCUMENTAI_PROJECT_ID", "GOOGLE_CLOUD_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    code = main(["parse", str(clinsci_pdf), "--parser", name, "-o", str(tmp_path), "--no-progress"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and needs in err and len(err.splitlines()) == 1
    assert not any(tmp_path.iterdir())  # nothing half-written


def test_a_failed_page_stops_the_remaining_requests(clinsci_pdf: Path):
    denied = genai_errors.ClientError(403, {"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}})
    client = FakeClient(dict.fromkeys(range(1, 14), '{"layout_elements": []}'), [denied])
    with pytest.raises(RemoteServiceError):
        GeminiParser(client=client, max_workers=1, retry=NO_WAIT).run(clinsci_pdf)
    assert len(client.models.calls) < 13
