"""Options and capabilities declared once (issue 22): the Option record, every strategy's and parser's
declaration against its constructor, typed errors naming the option and its owner, capabilities read
from the declaration (never from a signature), one registry shape with entry points, one fingerprint."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from grounded.chunking import Chunker
from grounded.chunking.base import REGISTRY, STRATEGIES, load_strategies, strategy_class, strategy_names
from grounded.chunking.configuration import Configuration
from grounded.chunking.pieces import PieceStrategy
from grounded.errors import ChunkingError, OptionError, UnknownNameError
from grounded.llm.spec import ModelSpec, check_model, takes_model
from grounded.model.options import Option, check_options, fingerprinted
from grounded.parsers import get_parser, parser_class, parser_names
from tests.support.data import shared
from tests.support.plugins import PARSER, STRATEGY, install_plugin, uninstall_plugin

PDF = ("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")


def _init_params(cls: type) -> set[str]:
    """The keyword names of ``cls``'s constructors along its class tree (the test reads signatures;
    the product never does)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        if "__init__" in klass.__dict__ and klass is not object:
            names |= {p for p, v in inspect.signature(klass.__init__).parameters.items()
                      if p != "self" and v.kind not in (v.VAR_KEYWORD, v.VAR_POSITIONAL)}
    return names


# -- the Option record ------------------------------------------------------------------------------
def test_option_checks_types_ranges_and_choices() -> None:
    pct = Option("percentile", float, 0.9, "breakpoint", low=0.0, high=1.0, open_low=True, open_high=True)
    assert isinstance(Option("f", float).check(1, "s"), float)  # an int given for a number becomes a float
    assert pct.check(0.5, "s") == 0.5 and isinstance(pct.check(0.5, "s"), float)
    for bad in (0.0, 1.0, 1.5, "0.5", True, float("nan")):
        with pytest.raises(OptionError) as err:
            pct.check(bad, "strategy 'semantic'")
        assert "strategy 'semantic'" in str(err.value) and "'percentile'" in str(err.value)
    n = Option("n", int, 1, low=1)
    assert n.check(3, "s") == 3 and n.from_text("4", "s") == 4
    with pytest.raises(OptionError, match="an int in \\[1, inf\\)"):
        n.from_text("2.5", "s")
    with pytest.raises(OptionError):
        n.check(True, "s")  # a bool is no count
    mode = Option("ocr", str, "auto", choices=("auto", "always", "never"))
    with pytest.raises(OptionError, match="one of auto, always, never"):
        mode.check("sometimes", "parser 'pymupdf'")
    flag = Option("centre", bool, True)
    assert flag.from_text("no", "s") is False and flag.cli_flag == "--centre"
    assert Option("min_tokens", int).cli_flag == "--min-tokens"
    assert not Option("embedder", None).on_cli and not Option("password", str, secret=True, cli=False).on_cli
    with pytest.raises(ValueError):
        Option("x", list)  # type: ignore[arg-type]


def test_check_options_names_the_owner_and_lists_the_options() -> None:
    declared = (Option("a", int, 1), Option("b", str, "x"))
    assert check_options(declared, {"a": 2}, "strategy 's'") == {"a": 2}
    with pytest.raises(OptionError) as err:
        check_options(declared, {"c": 1}, "strategy 's'", fixed=("max_tokens",))
    assert str(err.value) == "strategy 's': option 'c' is not an option of it; its options: a, b, max_tokens"
    secret = (Option("password", str, secret=True), Option("a", int))
    assert fingerprinted(secret, {"password": "pw", "a": 1}) == {"a": 1}


# -- strategies -------------------------------------------------------------------------------------
def test_every_strategy_declares_exactly_its_constructor_options() -> None:
    for name, cls in load_strategies().items():
        if name == STRATEGY:
            continue
        assert cls.options is not None, f"{name} declares no options"
        declared = {o.name for o in cls.options}
        assert declared == _init_params(cls) - {"max_tokens", "overlap"}, name
        assert all(o.help for o in cls.options), f"{name}: an option without help"


def test_capabilities_come_from_the_declaration() -> None:
    caps = {name: strategy_class(name).capabilities() for name in strategy_names() if name != STRATEGY}
    assert caps["llm"]["needs_model"] and caps["vision"]["needs_model"]
    assert not any(caps[n]["needs_model"] for n in ("fixed", "recursive", "semantic", "hierarchical"))
    assert all(caps[n]["uses_embedder"] for n in ("semantic", "cluster", "kamradt", "kamradt_mod"))
    assert all(caps[n]["partitions"] and not caps[n]["supports_overlap"] for n in ("semantic", "cluster", "llm"))
    assert caps["fixed"]["supports_overlap"] and not caps["fixed"]["partitions"]


class _DrivenByAClient(PieceStrategy):
    """A model-driven strategy that names no parameter ``llm`` (it takes its model through **options)."""

    name = "client_driven_test"
    piece_kind = None
    needs_model = True
    options = (Option("llm", None, help="the model"), Option("model", str, None, "model name", cli=False))

    def __init__(self, max_tokens: int = 256, overlap: int = 0, **options: Any) -> None:
        super().__init__(max_tokens, overlap)
        self.client = options.get("llm")

    def split(self, pieces: Any, doc: Any) -> Any:
        return [(0, len(doc))]


class _NamesLLMButIsNotModelDriven(PieceStrategy):
    name = "llm_named_test"
    piece_kind = None
    options = (Option("llm", str, "x", "a label that happens to be called llm"),)

    def __init__(self, max_tokens: int = 256, overlap: int = 0, llm: str = "x") -> None:
        super().__init__(max_tokens, overlap)

    def split(self, pieces: Any, doc: Any) -> Any:
        return [(0, len(doc))]


@pytest.fixture
def registered() -> Iterator[None]:
    for cls in (_DrivenByAClient, _NamesLLMButIsNotModelDriven):
        REGISTRY.register(cls.name, cls)
    yield
    for cls in (_DrivenByAClient, _NamesLLMButIsNotModelDriven):
        STRATEGIES.pop(cls.name, None)


def test_model_driven_is_the_declared_capability_not_the_signature(registered: None) -> None:
    assert takes_model("client_driven_test") and not takes_model("llm_named_test")
    with pytest.raises(ChunkingError, match="needs a language model"):
        check_model("client_driven_test", ModelSpec())
    assert check_model("llm_named_test", ModelSpec()) is False


def test_chunker_refuses_options_by_the_declaration() -> None:
    with pytest.raises(OptionError) as err:
        Chunker("semantic", 128, percentile=1.5)
    assert isinstance(err.value, ChunkingError) and "strategy 'semantic'" in str(err.value)
    with pytest.raises(OptionError, match="strategy 'recursive': option 'percentile' is not an option of it"):
        Chunker("recursive", 128, percentile=0.8)
    with pytest.raises(OptionError, match="'heading_budget' must be an int"):
        Chunker("hierarchical", 128, heading_budget="40")


def test_unknown_names_are_one_typed_error_listing_the_known_names() -> None:
    with pytest.raises(UnknownNameError) as err:
        strategy_class("nope")
    assert isinstance(err.value, ChunkingError) and isinstance(err.value, ValueError)
    assert err.value.kind == "strategy" and {"recursive", "llm", "vision"} <= set(err.value.known)
    with pytest.raises(UnknownNameError) as perr:
        parser_class("nope")
    assert isinstance(perr.value, ValueError)  # what callers of get_parser caught before
    assert str(perr.value).startswith("unknown parser 'nope'; choose one of: ") and "pymupdf" in str(perr.value)
    with pytest.raises(UnknownNameError):
        Chunker("nope")


# -- parsers ----------------------------------------------------------------------------------------
def test_every_parser_declares_exactly_its_constructor_options() -> None:
    for name in parser_names():
        if name == PARSER:
            continue
        cls = parser_class(name)
        declared = cls.declared_options()
        assert declared is not None, name
        expected = _init_params(cls) - ({"backend"} if name == "mineru_pipeline" else set())  # the subclass sets it
        assert {o.name for o in declared} == expected, name
    assert [o.name for o in parser_class("pymupdf").run_options] == ["password"]
    assert parser_class("pymupdf").run_options[0].secret


def test_get_parser_checks_options_by_the_declaration() -> None:
    with pytest.raises(OptionError, match="parser 'pymupdf': option 'ocr' must be one of auto, always, never"):
        get_parser("pymupdf", ocr="sometimes")
    with pytest.raises(OptionError, match="parser 'pymupdf': option 'chunk_size' is not an option of it"):
        get_parser("pymupdf", chunk_size=128)
    assert get_parser("pymupdf", ocr="never").ocr == "never"


# -- third-party registration by entry point ---------------------------------------------------------
@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = install_plugin(tmp_path / "site")
    monkeypatch.syspath_prepend(str(folder))
    yield folder
    uninstall_plugin()


def test_entry_points_register_a_parser_and_a_strategy(plugin: Path) -> None:
    assert PARSER in parser_names() and STRATEGY in strategy_names()
    root = get_parser(PARSER, upper=True).parse(shared(*PDF))
    result = Chunker(STRATEGY, 512, parts=3).chunk(root)
    assert result.metadata["parameters"]["parts"] == 3
    body = "".join(c.body for c in result.chunks)
    assert body and body == body.upper()
    with pytest.raises(OptionError, match=f"strategy '{STRATEGY}': option 'percentile'"):
        Chunker(STRATEGY, 512, percentile=0.5)
    with pytest.raises(OptionError, match=f"parser '{PARSER}': option 'uper'"):
        get_parser(PARSER, uper=True)


# -- one configuration fingerprint --------------------------------------------------------------------
def test_configuration_is_canonical_and_keeps_secrets_out() -> None:
    default = Configuration()
    assert default.canonical() == {"parser": "pymupdf", "strategy": "recursive", "max_tokens": 256, "overlap": 0, "model": None}
    assert Configuration(parser_options={"ocr": "auto"}).fingerprint() == default.fingerprint()  # the default, spelled out
    assert Configuration(parser_options={"ocr": "always"}).fingerprint() != default.fingerprint()
    semantic = Configuration(strategy="semantic", strategy_options={"percentile": 0.8})
    assert semantic.canonical()["strategy_options"] == {"percentile": 0.8}
    assert Configuration(tokenizer="cl100k_base").canonical()["tokenizer"] == "cl100k_base"
    assert Configuration(box_mode="line").canonical()["box_mode"] == "line"
    vision = Configuration(strategy="vision", strategy_options={"password": "hunter2", "batch_size": 2})
    assert "hunter2" not in repr(vision.canonical()) and vision.canonical()["strategy_options"] == {"batch_size": 2}
    gemini = Configuration(parser="gemini", parser_options={"api_key": "sk-secret", "dpi": 100})
    assert "sk-secret" not in repr(gemini.canonical()) and gemini.canonical()["parser_options"] == {"dpi": 100}
    with pytest.raises(OptionError):
        Configuration(strategy="semantic", strategy_options={"percentile": 2.0}).canonical()

