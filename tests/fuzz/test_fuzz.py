"""The bad-input contract of issue #14 on a seeded, generated corpus (every kind at least once).

For every file: a typed error naming the file, or a non-empty result holding the text the file
carries, or an empty result whose pages each say why -- never a traceback, an untyped error, a
silent empty success, lost text or a leftover temp/half-written file. The API runs on every case;
the CLI (a subprocess per file, ~2 s each) on the first case of each kind; the CLI on the other
cases is ``python benchmarks/fuzz_run.py --suite-corpus --cli all`` (the same seeded files). The
100 k-character page is ``slow``. The 1000-page kind and the larger run (~200 byte-flip mutants) are
``python benchmarks/fuzz_run.py --cases 320 --seed 0`` (table in docs/results/fuzz.md).
The last tests feed the checker stand-ins with each defect, so a checker that passes everything
cannot go unnoticed.
"""

from __future__ import annotations

import pytest

from tests.support.data import shared

from .contract import check_api, check_cli, expected_text
from .corpus import KINDS, TEST_COUNTS, Case, build_corpus

SEED = 0
#: (kind, index) of the CI subset
SUBSET = [(kind, i) for kind in KINDS for i in range(TEST_COUNTS[kind])]
#: the CLI runs on the first case of each kind (a subprocess per file costs ~1-3 s); on the others in
#: ``benchmarks/fuzz_run.py --suite-corpus --cli all``
CLI_CASES = [(kind, i) for kind, i in SUBSET if i == 0]


def _id(item: tuple[str, int]) -> str:
    return f"{item[0]}-{item[1]}"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, int], Case]:
    shared()  # skip when ../shared/data is not beside the repo
    cases = build_corpus(tmp_path_factory.mktemp("fuzz-corpus"), seed=SEED)
    numbered: dict[tuple[str, int], Case] = {}
    for case in cases:
        index = sum(1 for kind, _ in numbered if kind == case.kind)
        numbered[(case.kind, index)] = case
    return numbered


@pytest.fixture(scope="module")
def parser():
    import grounded

    return grounded.get_parser("pymupdf")


@pytest.fixture(scope="module")
def chunker():
    import grounded

    return grounded.Chunker("recursive", 64)


def test_subset_covers_every_kind():
    assert {kind for kind, _ in SUBSET} | {"long_text", "thousand_pages", "image_bomb"} == set(KINDS)
    assert 40 <= len(SUBSET) <= 60


def test_generation_is_deterministic(tmp_path):
    shared()
    kinds = ["byte_flip", "truncated", "zero_pages", "rotated", "broken_xref", "type3", "odd_name"]
    a = build_corpus(tmp_path / "a", seed=3, kinds=kinds)
    b = build_corpus(tmp_path / "b", seed=3, kinds=kinds)
    assert [(c.kind, c.name, c.expect, c.note, c.path.name) for c in a] == [
        (c.kind, c.name, c.expect, c.note, c.path.name) for c in b
    ]
    assert [c.path.read_bytes() for c in a] == [c.path.read_bytes() for c in b]
    c = build_corpus(tmp_path / "c", seed=4, kinds=["byte_flip"])
    assert [x.path.read_bytes() for x in c] != [x.path.read_bytes() for x in a if x.kind == "byte_flip"]


@pytest.mark.parametrize("item", SUBSET, ids=_id)
def test_api_contract(item, corpus, parser, chunker, tmp_path):
    case = corpus[item]
    out = check_api(case, tmp_path / "out", parser, chunker, expected_text(case.path))
    assert out.ok, out.describe()


#: byte-flip mutants of the seed-0 full run (benchmarks/fuzz_run.py) that broke the contract once
KNOWN_MUTANTS = (102,)


@pytest.mark.parametrize("index", KNOWN_MUTANTS)
def test_known_mutants(index, parser, chunker, tmp_path):
    shared()
    from .corpus import full_counts

    counts = {"byte_flip": full_counts(320)["byte_flip"]}
    cases = build_corpus(tmp_path / "in", seed=SEED, counts=counts, kinds=["byte_flip"])
    case = cases[index]
    expected = expected_text(case.path)
    outs = [check_api(case, tmp_path / "api", parser, chunker, expected), check_cli(case, tmp_path / "cli", expected)]
    assert all(o.ok for o in outs), "\n".join(o.describe() for o in outs)


@pytest.mark.parametrize("item", CLI_CASES, ids=_id)
def test_cli_contract(item, corpus, tmp_path):
    case = corpus[item]
    out = check_cli(case, tmp_path / "out", expected_text(case.path))
    assert out.ok, out.describe()


@pytest.mark.slow
def test_long_text_page(parser, chunker, tmp_path):
    """100 k characters on one page, through the API and the CLI. (The 1000-page kind takes
    ~5 CPU-minutes per interface: it runs in ``benchmarks/fuzz_run.py`` only.)"""
    shared()
    (case,) = build_corpus(tmp_path / "in", seed=SEED, counts={"long_text": 1}, kinds=["long_text"])
    expected = expected_text(case.path)
    outs = [check_api(case, tmp_path / "api", parser, chunker, expected), check_cli(case, tmp_path / "cli", expected)]
    assert all(o.ok for o in outs), "\n".join(o.describe() for o in outs)


# ---------------------------------------------------------------------------------------------
# the checker itself: each violation class is detected (a checker that always says OK proves nothing)
# ---------------------------------------------------------------------------------------------


class _BrokenParser:
    """Stands in for a parser with one of the defects the contract forbids."""

    def __init__(self, mode: str):
        self.mode = mode

    def run(self, path):
        from grounded.errors import CorruptPDFError
        from grounded.model import ParsingResult
        from grounded.model import ParsingResultType as T
        from grounded.parsers.base import ParseOutput

        if self.mode == "untyped":
            raise RuntimeError("code=2: something inside MuPDF")
        if self.mode == "unnamed":
            raise CorruptPDFError("some other file.pdf", "damaged")
        root = ParsingResult(id="root", type=T.ROOT, metadata={"pages": [{"page": 1, "width": 612, "height": 792}]})
        if self.mode == "lossy":
            root.add_child(ParsingResult(id="p1", type=T.PARAGRAPH, content="only a few words"))
        mode = self.mode

        class _Output(ParseOutput):
            def save(self, out_dir, name=None):
                out_dir.mkdir(parents=True, exist_ok=True)
                (out_dir / "x.json").write_text("{}")
                if mode == "half":
                    (out_dir / ".x.md.1234.tmp").write_text("partial")
                else:
                    (out_dir / "x.md").write_text("")
                return out_dir / "x.json", out_dir / "x.md"

        return _Output(root=root, markdown="")


@pytest.mark.parametrize(
    "mode, expect_kind, codes",
    [
        ("untyped", "rotated", {"UNTYPED_ERROR"}),
        ("unnamed", "byte_flip", {"UNTYPED_ERROR"}),
        ("empty", "byte_flip", {"SILENT_EMPTY"}),
        ("empty", "rotated", {"SILENT_EMPTY", "TEXT_LOST"}),
        ("lossy", "rotated", {"TEXT_LOST"}),
        ("lossy", "oversize_page", {"ACCEPTED_BAD_INPUT"}),
        ("half", "byte_flip", {"SILENT_EMPTY", "TEMP_FILE_LEFT", "HALF_WRITTEN"}),
    ],
)
def test_checker_flags_each_violation(mode, expect_kind, codes, corpus, chunker, tmp_path):
    case = corpus[(expect_kind, 0)]
    out = check_api(case, tmp_path / "out", _BrokenParser(mode), chunker, expected_text(case.path))
    assert {v.code for v in out.violations} >= codes, out.describe()
    assert not out.ok


_FAKE_CLI = {
    "traceback": "import sys\nsys.stderr.write('Traceback (most recent call last):\\n  File x\\nRuntimeError: boom\\n')\nsys.exit(1)\n",
    "unnamed": "import sys\nsys.stderr.write('grounded parse: error: something went wrong\\n')\nsys.exit(1)\n",
    "half": (
        "import sys, pathlib\nout = pathlib.Path(sys.argv[sys.argv.index('-o') + 1])\nout.mkdir(parents=True)\n"
        "(out / 'x.json').write_text('not json')\n(out / '.x.md.99.tmp').write_text('')\n"
    ),
    "signal": "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
}


@pytest.mark.parametrize(
    "mode, codes",
    [
        ("traceback", {"TRACEBACK"}),
        ("unnamed", {"UNTYPED_ERROR"}),
        ("half", {"HALF_WRITTEN", "TEMP_FILE_LEFT"}),
        ("signal", {"CRASH"}),
    ],
)
def test_checker_flags_cli_violations(mode, codes, corpus, tmp_path, monkeypatch):
    import sys

    from . import contract

    script = tmp_path / "fake_cli.py"
    script.write_text(_FAKE_CLI[mode])
    monkeypatch.setattr(contract, "grounded_exe", lambda: [sys.executable, str(script)])
    case = corpus[("rotated", 0)]
    out = check_cli(case, tmp_path / "out", expected_text(case.path))
    assert {v.code for v in out.violations} >= codes, out.describe()
