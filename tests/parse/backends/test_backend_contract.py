"""The backend contract, checked on all nine backends with real recorded (or re-encoded real) outputs:

* native labels go through ``self.label_map``: a ``label_map=`` override, or a subclass's
  ``LABEL_MAP``, changes the output of every backend;
* Markdown is the tool's own where it writes one, else the post-processed tree rendered once;
* ``load_native`` / ``record_native`` / ``parse_native`` replay recorded outputs (no private calls);
* optional dependencies are checked by one helper that names the ``pip install``;
* the example backend of docs/backends/writing_a_backend.md runs on a recorded output.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from grounded.errors import BackendUnavailableError, ParserError
from grounded.io.markdown import to_markdown
from grounded.model import HEADING_TYPES, ParsingBoundingBox, ParsingResult, ParsingResultType
from grounded.parsers import PARSERS, BaseParser, ParseOutput, parser_class
from grounded.parsers.backends.docling import DoclingParser
from grounded.parsers.backends.documentai import DocumentAIParser
from grounded.parsers.backends.gemini import GeminiParser
from grounded.parsers.backends.granite_docling import DocTagsPages, GraniteDoclingParser
from grounded.parsers.backends.llamaparse import LlamaParseParser
from grounded.parsers.backends.mineru import MinerUPipelineParser, MinerUVLMParser
from grounded.parsers.backends.pymupdf.parser import PyMuPDFParser
from grounded.parsers.backends.unstructured import UnstructuredParser
from grounded.runtime.optional import available, require
from tests.support.backends.docling import RecordedConverter
from tests.support.backends.documentai import IDS, FakeDocumentAI, as_sdk_document, layout_document
from tests.support.backends.gemini import FakeClient, gemini_reply
from tests.support.backends.granite_docling import RecordedVlmConverter
from tests.support.backends.llamaparse import FakeLlamaParse, llamaparse_result
from tests.support.backends.mineru import copying_runner
from tests.support.cloud_fixtures import box_text_distances, reference_elements
from tests.support.data import REPO, shared

T = ParsingResultType
#: the override every backend must honour: its body-text label -> KEY_VALUE (a text type no
#: backend or post-processing step treats specially)
TARGET = T.KEY_VALUE
DOCLING_PDF = ("native", "docling", "2305.03393v1-pg9.pdf")
MINERU = ("native", "mineru", "legacy_magic-pdf_0.7.0b1")
UNSTRUCTURED_PDF = ("native", "unstructured", "embedded-images-tables.pdf")


class Case:
    """One backend: its class and constructor arguments, a recorded (or re-encoded real) native
    output with its PDF, and the native label of its body text."""

    def __init__(self, cls: type[BaseParser], kwargs: Callable[[], dict[str, Any]], label: str, pdf: Path,
                 native: Callable[[BaseParser], Any] | None) -> None:
        self.cls, self.kwargs, self.label, self.pdf, self.native = cls, kwargs, label, pdf, native

    def build(self, cls: type[BaseParser] | None = None, **kwargs: Any) -> BaseParser:
        return (cls or self.cls)(**self.kwargs(), **kwargs)

    def output(self, cls: type[BaseParser] | None = None, **kwargs: Any) -> ParseOutput:
        parser = self.build(cls, **kwargs)
        if self.native is None:  # PyMuPDF has no recorded native format: the real tool runs
            return parser.run(self.pdf)
        return parser.parse_native(self.native(parser), self.pdf)


def cases(clinsci_pdf: Path) -> dict[str, Case]:
    refs = reference_elements(clinsci_pdf, [1])
    docling_pdf = shared(*DOCLING_PDF)
    mineru_middle = shared(*MINERU, "middle.json")
    mineru_pdf = shared(*MINERU, "one_page_with_table_image.pdf")
    unstructured_pdf = shared(*UNSTRUCTURED_PDF)
    return {
        "pymupdf": Case(PyMuPDFParser, dict, "text", docling_pdf, None),
        "docling": Case(DoclingParser, lambda: {"converter": RecordedConverter()}, "text", docling_pdf,
                        lambda p: p.load_native(docling_pdf.with_suffix(".json"))),
        "granite_docling": Case(GraniteDoclingParser, lambda: {"converter": RecordedVlmConverter(DocTagsPages([]))},
                                "text", docling_pdf, lambda p: p.load_native(docling_pdf.with_suffix(".doctags.txt"))),
        "mineru_pipeline": Case(MinerUPipelineParser, lambda: {"runner": copying_runner({})}, "text", mineru_pdf,
                                lambda p: p.load_native(mineru_middle)),
        "mineru_vlm": Case(MinerUVLMParser, lambda: {"runner": copying_runner({})}, "text", mineru_pdf,
                           lambda p: p.load_native(mineru_middle)),
        "unstructured": Case(UnstructuredParser, lambda: {"partition": lambda **_: []}, "NarrativeText",
                             unstructured_pdf, lambda p: p.load_native(unstructured_pdf.with_suffix(".pdf.json"))),
        "gemini": Case(GeminiParser, lambda: {"client": FakeClient({1: gemini_reply(refs)}), "pages": [1]}, "text",
                       clinsci_pdf, lambda p: p.record_native(clinsci_pdf)),
        "llamaparse": Case(LlamaParseParser, lambda: {"client": FakeLlamaParse(llamaparse_result(refs))}, "text",
                           clinsci_pdf, lambda p: p.record_native(clinsci_pdf)),
        "documentai": Case(
            DocumentAIParser,
            lambda: {"client": FakeDocumentAI(lambda r: as_sdk_document(layout_document(refs))), **IDS},
            "paragraph", clinsci_pdf, lambda p: p.record_native(clinsci_pdf)),
    }


@pytest.fixture(scope="module")
def backend_cases(clinsci_pdf: Path) -> dict[str, Case]:
    return cases(clinsci_pdf)


def labelled(root: ParsingResult, label: str) -> Counter[ParsingResultType]:
    return Counter(n.type for n in root.walk() if n.metadata.get("native_label") == label)


def test_the_cases_cover_every_registered_backend(backend_cases):
    assert set(backend_cases) == set(PARSERS)


@pytest.mark.parametrize("name", list(PARSERS))
def test_label_map_override_changes_the_output_of_every_backend(name: str, backend_cases):
    case = backend_cases[name]
    default = case.output()
    before = labelled(default.root, case.label)
    mapped = parser_class(name).LABEL_MAP[case.label]
    assert before[mapped] >= 1 and before[TARGET] == 0, before
    out = case.output(label_map={case.label: TARGET.value})  # names are accepted as values
    after = labelled(out.root, case.label)
    assert after[TARGET] == before[mapped] and after[mapped] == 0, (before, after)
    # the other labels keep their types
    others = Counter(n.type for n in default.root.walk() if n.metadata.get("native_label") != case.label)
    others_after = Counter(n.type for n in out.root.walk() if n.metadata.get("native_label") != case.label)
    assert others_after[T.TABLE] == others[T.TABLE] and others_after[T.FIGURE] == others[T.FIGURE]


@pytest.mark.parametrize("name", ["pymupdf", "unstructured", "gemini", "llamaparse", "documentai"])
def test_a_subclass_label_map_is_used_too(name: str, backend_cases):
    """The backends that ignored an overridden ``LABEL_MAP`` before (#13.6) honour a subclass's."""
    case = backend_cases[name]
    base = parser_class(name)
    sub = type(f"Custom{base.__name__}", (base,), {"LABEL_MAP": {**base.LABEL_MAP, case.label: TARGET}})
    out = case.output(sub)
    assert labelled(out.root, case.label)[TARGET] >= 1 and labelled(out.root, case.label)[base.LABEL_MAP[case.label]] == 0
    assert base.LABEL_MAP[case.label] != TARGET


def test_label_map_values_must_be_element_types():
    with pytest.raises(ValueError, match=r"label_map\['text'\] = 'BODY' is not an element type"):
        PyMuPDFParser(label_map={"text": "BODY"})
    parser = PyMuPDFParser(label_map={"text": "FOOTNOTE", "aside": T.UNKNOWN})
    assert parser.label_map["text"] == T.FOOTNOTE and parser.label_map["aside"] == T.UNKNOWN
    assert parser.label_map["title"] == T.TITLE  # the rest of the class table is kept
    assert PyMuPDFParser.LABEL_MAP["text"] == T.PARAGRAPH  # the class is not changed


# -- one heading-level and one list-grouping algorithm (post-processing) ------------------------------
LEVEL_SOURCES = {"backend", "title", "numbering", "numbering_style", "font_size", "style", "default"}
ITEM_CONTAINERS = {T.LIST_ITEM: T.LIST, T.REFERENCE_ITEM: T.REFERENCE_LIST}


@pytest.mark.parametrize("name", list(PARSERS))
def test_every_backend_tree_gets_levels_and_lists_from_post_processing(name: str, backend_cases):
    case = backend_cases[name]
    keep_all = {"drop_types": ()}  # reference items kept, so REFERENCE_LISTs are checked too
    out = case.output(**keep_all).root
    headings = [n for n in out.walk() if n.type in HEADING_TYPES]
    for h in headings:
        level, source = h.metadata["level"], h.metadata["level_source"]
        assert isinstance(level, int) and level >= 1 and source in LEVEL_SOURCES, (h.content, level, source)
        if source == "backend":
            assert level == h.metadata.get("native_level", level)
    items = [n for n in out.walk() if n.type in ITEM_CONTAINERS]
    assert all(n.parent is not None and n.parent.type == ITEM_CONTAINERS[n.type] for n in items)
    for container in (n for n in out.walk() if n.metadata.get("synthetic")):
        assert container.type in (T.LIST, T.REFERENCE_LIST) and container.children
        assert {c.type for c in container.children} == {next(k for k, v in ITEM_CONTAINERS.items() if v == container.type)}
    # without hierarchy inference the backend's own labels stand: no level is decided anywhere else
    raw = case.output(infer_hierarchy=False, **keep_all).root
    assert not [n for n in raw.walk() if "level" in n.metadata or "level_source" in n.metadata]
    if name == "pymupdf":  # the real tool on a real page: headings and their style evidence
        assert headings and all(isinstance(h.metadata.get("font_size"), float) for h in headings)


class BoxReplay(BaseParser):
    """A backend that knows only element types, text and boxes (no levels, no font sizes)."""

    name = "box_replay"

    def _parse(self, pdf_path: Path) -> Any:  # pragma: no cover - only replayed
        raise NotImplementedError

    def _transform(self, native: Any) -> ParsingResult:
        root = ParsingResult("", T.ROOT)
        for type_, content, boxes in native:
            root.add_child(ParsingResult("", type_, content, [ParsingBoundingBox(*b) for b in boxes]))
        return root


def test_a_backend_without_style_evidence_gets_pymupdfs_levels_from_the_same_boxes():
    """One algorithm, fed from the text layer: the elements of PyMuPDF's unfinished tree (types,
    text and boxes only, lists as bare items) replayed through another backend come out with the
    same heading types, levels and level sources as PyMuPDF's own parse (which carries font sizes)."""
    pdf = shared("pdfs", "docling_groundtruth", "multi_page.pdf")
    raw = PyMuPDFParser(infer_hierarchy=False).parse(pdf)
    native = [
        (n.type, n.content, [(b.page, b.left, b.top, b.right, b.bottom) for b in n.geom])
        for c in raw.children
        for n in (c.children if c.type == T.LIST else [c])
    ]
    assert not any("level" in n.metadata for n in raw.walk())
    replayed = BoxReplay().parse_native(native, pdf).root
    own = PyMuPDFParser().parse(pdf)

    def headings(root: ParsingResult) -> list[tuple]:
        return [(n.type, n.metadata["level"], n.metadata["level_source"], n.content)
                for n in root.walk() if n.type in HEADING_TYPES]

    assert len(headings(own)) >= 10 and {h[2] for h in headings(own)} >= {"style"}
    assert headings(replayed) == headings(own)
    assert replayed.metadata["body_font_size"] == own.metadata["body_font_size"]
    assert [len(n.children) for n in replayed.walk() if n.type == T.LIST] == [
        len(n.children) for n in own.walk() if n.type == T.LIST
    ]


#: ``metadata["level"] =``, ``{"level": ...}``, ``setdefault("level"`` or a ``level=`` keyword argument;
#: and the synthetic-container marker
_LEVEL_WRITE = re.compile(
    r"""\[\s*["']level["']\s*\]\s*=(?!=)|["']level["']\s*:|setdefault\(\s*["']level["']|(?:^|[(,])\s*level=(?!=)"""
    r"""|heading\.level\s*(?:,[^=]*)?=(?!=)"""  # the typed record (grounded.model.element_info.HeadingInfo)
)
_SYNTHETIC = re.compile(r"""["']synthetic["']|SYNTHETIC|list-item group""")


def test_only_post_processing_assigns_levels_and_makes_synthetic_lists():
    """Grep-style companion of the behaviour test above: no backend module (nor the PyMuPDF tree
    builder) writes a heading level or makes a synthetic list container; hierarchy.py does."""
    parsers = REPO / "core" / "parsers"
    offenders = []
    for path in sorted(parsers.rglob("*.py")):  # the backends/ sub-folders included
        if path.name == "hierarchy.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if _LEVEL_WRITE.search(code) or _SYNTHETIC.search(code):
                offenders.append(f"{path.relative_to(parsers)}:{number}: {line.strip()}")
    assert offenders == []
    own = (parsers / "hierarchy.py").read_text(encoding="utf-8")
    assert _SYNTHETIC.search(own) and re.search(r"""heading\.level\s*(?:,[^=]*)?=(?!=)""", own)


# -- Markdown --------------------------------------------------------------------------------------
#: backends whose tool writes Markdown itself (kept as the tool wrote it)
NATIVE_MARKDOWN = {"pymupdf", "docling", "granite_docling", "mineru_pipeline", "mineru_vlm", "llamaparse"}


@pytest.mark.parametrize("name", sorted(set(PARSERS) - {"pymupdf"}))
def test_markdown_is_the_tools_own_or_the_finished_tree_rendered(name: str, backend_cases):
    cls = parser_class(name)
    assert (cls._get_md is not BaseParser._get_md) == (name in NATIVE_MARKDOWN)
    out = backend_cases[name].output()
    rendered = to_markdown(out.root)
    if name in NATIVE_MARKDOWN and not name.startswith("mineru"):  # the legacy MinerU pair has no .md
        assert out.markdown != rendered
    else:
        assert out.markdown == rendered
        body = [n for n in out.root.walk() if n.type == T.PARAGRAPH and len(n.content) > 40]
        flat = " ".join(out.markdown.split())
        assert body and all(" ".join(n.content.split()) in flat for n in body)
        headings = [n for n in out.root.walk() if n.type in HEADING_TYPES]
        assert all(re.search(r"^#+ " + re.escape(" ".join(h.content.split())), out.markdown, re.M) for h in headings)


# -- recorded outputs ------------------------------------------------------------------------------
def test_load_native_reads_json_and_names_a_bad_file(tmp_path: Path):
    recorded = shared(*UNSTRUCTURED_PDF).with_suffix(".pdf.json")
    assert UnstructuredParser.load_native(recorded) == json.loads(recorded.read_text(encoding="utf-8"))
    bad = tmp_path / "reply.json"
    bad.write_text('{"pages": [', encoding="utf-8")
    with pytest.raises(ParserError) as err:
        GeminiParser.load_native(bad)
    assert "reply.json" in str(err.value) and "gemini" in str(err.value)
    with pytest.raises(ParserError, match="missing.json"):
        LlamaParseParser.load_native(tmp_path / "missing.json")


def test_recorded_native_replays_like_a_run(backend_cases, clinsci_pdf: Path, tmp_path: Path):
    """record_native -> JSON file -> load_native -> parse_native gives what run() gives."""
    case = backend_cases["gemini"]
    parser = case.build()
    path = tmp_path / "gemini.json"
    path.write_text(json.dumps(parser.record_native(clinsci_pdf)), encoding="utf-8")
    replayed = parser.parse_native(parser.load_native(path), clinsci_pdf)
    ran = case.build().run(clinsci_pdf)
    strip = ("elapsed_seconds",)
    assert {k: v for k, v in replayed.root.metadata.items() if k not in strip} == {
        k: v for k, v in ran.root.metadata.items() if k not in strip
    }
    assert [(n.id, n.type, n.content) for n in replayed.root.walk()] == [(n.id, n.type, n.content) for n in ran.root.walk()]
    assert replayed.markdown == ran.markdown


def test_a_native_output_of_another_tool_is_a_parser_error_naming_the_pdf(clinsci_pdf: Path):
    with pytest.raises(ParserError) as err:
        DocumentAIParser(client=FakeDocumentAI(lambda r: None), **IDS).parse_native(["not", "a document"], clinsci_pdf)
    assert clinsci_pdf.name in str(err.value) and "documentai" in str(err.value)


# -- optional dependencies -------------------------------------------------------------------------
def test_require_names_the_pip_install_and_finds_without_importing():
    assert available("json") and not available("no_such_module_xyz") and not available("no_such_pkg.sub")
    require("json", extra="core")
    with pytest.raises(BackendUnavailableError) as err:
        require("no_such_pkg.sub", extra="docling", what="Docling parser", package="docling")
    assert isinstance(err.value, ImportError)
    assert str(err.value) == (
        "Docling parser needs the optional dependency 'docling': pip install 'grounded[docling]' (or: pip install docling)"
    )


def test_backends_check_optional_dependencies_with_the_one_helper():
    """No backend module looks for a module itself (find_spec / try-import): they call require()."""
    backends = REPO / "core" / "parsers" / "backends"
    owned = {"docling.py", "granite_docling.py", "mineru.py", "unstructured.py", "gemini.py", "llamaparse.py",
             "documentai.py"}
    sources = {name: (backends / name).read_text(encoding="utf-8") for name in owned}
    sources["cloud.py"] = (REPO / "core" / "runtime" / "cloud.py").read_text(encoding="utf-8")
    for name, source in sources.items():
        assert "find_spec" not in source and "BackendUnavailableError(" not in source, name
    assert all("require(" in sources[n] for n in owned)
    for adapter in ("llama_index_grounded", "langchain_grounded"):  # the adapters' import guards too
        guard = (REPO / adapter / "_compat.py").read_text(encoding="utf-8")
        assert "require(" in guard and "except ImportError" not in guard, adapter


# -- the documented example backend ----------------------------------------------------------------
def example_backend() -> type[BaseParser]:
    doc = (REPO / "docs" / "backends" / "writing_a_backend.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert 25 <= len(code.strip().splitlines()) <= 45  # a ~30-line backend
    namespace: dict[str, Any] = {}
    exec(compile(code, "writing_a_backend.md", "exec"), namespace)  # noqa: S102 - the docs' own example
    cls: type[BaseParser] = namespace["ElementListParser"]
    return cls


def test_the_documented_example_backend_runs_on_a_recorded_output():
    cls = example_backend()
    pdf = shared(*UNSTRUCTURED_PDF)
    parser = cls()
    out = parser.parse_native(parser.load_native(pdf.with_suffix(".pdf.json")), pdf)
    root = out.root
    assert root.metadata["parser"] == "element_list"
    types = Counter(n.type for n in root.walk())
    assert types[T.PARAGRAPH] >= 2 and types[T.FIGURE] == 2 and types[T.CAPTION] >= 1 and types[T.TABLE] == 1
    assert types[T.PAGE_HEADER] == 0  # dropped by the shared post-processing
    assert types[T.MISSING] >= 1  # "UncategorizedText" is not in its table: kept, marked
    distances = box_text_distances(root, pdf, min_chars=10)
    assert len(distances) >= 5 and max(d for _, d in distances) < 0.2
    lined = [n for n in root.walk() if n.type == T.PARAGRAPH and n.geom]
    assert lined and all(b.spans for n in lined for b in n.geom)  # PDF line spans from BaseParser
    assert out.markdown == to_markdown(root) and "\nCorrosion rate (mm/year)\n" in out.markdown
    # its one "Title" is a 6.5 pt table column head on an 8 pt page: the shared heading algorithm
    # (font size from the text layer) makes it a paragraph
    (corrosion,) = [n for n in root.walk() if n.content == "Corrosion rate (mm/year)"]
    assert corrosion.type == T.PARAGRAPH and corrosion.metadata["demoted_from"] == "section-header"
    # its labels go through label_map like the shipped backends'
    relabelled = cls(label_map={"Image": "UNKNOWN"}).parse_native(parser.load_native(pdf.with_suffix(".pdf.json")), pdf)
    assert Counter(n.type for n in relabelled.root.walk())[T.FIGURE] == 0
    if not available("unstructured.partition.pdf"):  # the tool itself is behind its extra
        with pytest.raises(BackendUnavailableError, match=r"pip install 'grounded\[unstructured\]'"):
            parser.run(pdf)
