"""The strategy registry and the strategies' parameters (issue 30, item 4): the built-ins in one
lazy table, one class per name, ``params()`` derived from the ``Option`` declarations.

A strategy's ``params()`` enter every chunk's metadata and the chunker fingerprint (so every chunk
id): the table below holds what each built-in strategy returned before ``params()`` was derived from
the ``Option`` declarations, key order and value types included, and the chunker fingerprints of
the same configurations. Any difference changes stored chunk ids."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from grounded.chunking import Chunker, nlp
from grounded.chunking.base import BUILTIN_STRATEGIES, register_strategy, strategy_class
from grounded.chunking.pieces import PieceStrategy
from grounded.chunking.strategies.semantic import minilm_embedder, punkt_sentence_tokenizer
from grounded.errors import ChunkingError, ConfigError, NameTakenError
from grounded.model.options import Option

# (strategy, max_tokens, overlap, options) -> params() as (key, type name, value), in order
PARAMS: list[tuple[str, int, int, dict[str, Any], list[tuple[str, str, Any]]]] = [
    ("fixed", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0)]),
    ("fixed", 100, 20, {}, [("max_tokens", "int", 100), ("overlap", "int", 20)]),
    ("recursive", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0),
                               ("delimiters", "list", ["\n\n", "\n", ". ", "!", "?", "¶", ""])]),
    ("recursive", 128, 16, {"delimiters": ["\n\n", ". "]},
     [("max_tokens", "int", 128), ("overlap", "int", 16), ("delimiters", "list", ["\n\n", ". "])]),
    ("hierarchical", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0), ("heading_budget", "int", 102)]),
    ("hierarchical", 512, 32, {"heading_budget": 100},
     [("max_tokens", "int", 512), ("overlap", "int", 32), ("heading_budget", "int", 100)]),
    ("semantic", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0), ("percentile", "float", 0.9),
                              ("min_tokens", "int", 128), ("language", "str", "english")]),
    ("semantic", 300, 0, {"percentile": 0.7, "min_tokens": 10, "language": "english"},
     [("max_tokens", "int", 300), ("overlap", "int", 0), ("percentile", "float", 0.7), ("min_tokens", "int", 10),
      ("language", "str", "english")]),
    ("cluster", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0), ("piece_tokens", "int", 50),
                             ("max_pieces", "int", 5), ("centre", "bool", True)]),
    ("cluster", 30, 0, {"piece_tokens": 10, "max_pieces": 2, "centre": False},
     [("max_tokens", "int", 30), ("overlap", "int", 0), ("piece_tokens", "int", 10), ("max_pieces", "int", 2),
      ("centre", "bool", False)]),
    ("kamradt_mod", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0), ("avg_tokens", "int", 256),
                                 ("min_chunk_tokens", "int", 50), ("buffer", "int", 3)]),
    ("kamradt_mod", 400, 0, {"avg_tokens": 200, "min_chunk_tokens": 20, "buffer": 1},
     [("max_tokens", "int", 400), ("overlap", "int", 0), ("avg_tokens", "int", 200), ("min_chunk_tokens", "int", 20),
      ("buffer", "int", 1)]),
    ("kamradt", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0), ("percentile", "float", 0.95),
                             ("buffer", "int", 1), ("language", "str", "english")]),
    ("kamradt", 64, 0, {"percentile": 0.5, "buffer": 2, "language": "english"},
     [("max_tokens", "int", 64), ("overlap", "int", 0), ("percentile", "float", 0.5), ("buffer", "int", 2),
      ("language", "str", "english")]),
    ("llm", 256, 0, {}, [("max_tokens", "int", 256), ("overlap", "int", 0), ("piece_tokens", "int", 50),
                         ("window_tokens", "int", 800), ("retries", "int", 1), ("llm", "NoneType", None)]),
    ("llm", 300, 0, {"piece_tokens": 30, "window_tokens": 500, "retries": 2},
     [("max_tokens", "int", 300), ("overlap", "int", 0), ("piece_tokens", "int", 30), ("window_tokens", "int", 500),
      ("retries", "int", 2), ("llm", "NoneType", None)]),
]

# the same configurations -> Chunker(...).fingerprint (default tokenizer), as issued before the change
FINGERPRINTS = [
    "c68eb41bc790f7833097c10d078607b2dee5a25844b03dfddbe165e99f57dc3f",
    "de7e07b058c2111d98ca840f830dffebaf18ed953834ff82a7933493126ceb85",
    "42f0cd60c11718e0296d40cfd36f0390d0c6a041ab3a21b99049fc7a8200feb3",
    "d772afebda20c2c08de536bf3015238a8d5e13fc09fe4b250b4fc47f9dd2f8c7",
    "08d2f7e3c7f00ac208ef24637b7deee64ea5802937d844fde51ba3a2e64a69df",
    "4d83b1bfa8649ce44b735cbf280fb5596922f8cf72c8ba8891c7d112a2eebec0",
    "eefe13a064100ab86508b13af9de357e5558f9762ff8f29e85b47658356c4641",
    "cbd6b024b164bd886196a2cda3c09be3ff8f28474b241cc882b11e3d0693b27a",
    "e8f9bc59b97239924a3eab0a7d66efdb46e73495ac39ad9c33156c62caaf8473",
    "cadc89e9ecb7f0760e6362a519ee532b5902ff17d0077fb144be4897ab45e7d8",
    "906bde004f184d1831346ab3e3b7a73af4ee2e013e3af9aebbfec3db19f63cb7",
    "4b26749f87937e52261b9b1a625e970788c5699a43b9339896a083b46f213b9c",
    "4454d1902f4deb8cdf5a5b405a9de684954c0fd23237217697db8c58f4dec8ac",
    "1580b0f40035926714a8a2549faa91ff13ccc4565ec89d41fe430bfb1c7c653f",
    "25011066e00d1078544b962820cc1d82394c86231be6872a5a539634c9b8958c",
    "a02549b95c4f5a28848db9f93581f4fc2b98170e403cf06bca44b40ebf3bb807",
]


def _ids(case: tuple[Any, ...]) -> str:
    return f"{case[0]}-{case[1]}-{case[2]}-{'opts' if case[3] else 'defaults'}"


@pytest.mark.parametrize("case", PARAMS, ids=_ids)
def test_params_of_every_builtin_strategy_are_unchanged(case: tuple[Any, ...]) -> None:
    name, max_tokens, overlap, options, expected = case
    params = strategy_class(name)(max_tokens, overlap, **options).params()
    assert [(k, type(v).__name__, v) for k, v in params.items()] == expected


@pytest.mark.parametrize(("case", "fingerprint"), list(zip(PARAMS, FINGERPRINTS, strict=True)), ids=[_ids(c) for c in PARAMS])
def test_chunker_fingerprints_are_unchanged(case: tuple[Any, ...], fingerprint: str) -> None:
    name, max_tokens, overlap, options, _ = case
    assert Chunker(name, max_tokens, overlap, **options).fingerprint == fingerprint


def _callable_model(images: Any, prompt: str) -> str:
    return ""


@pytest.mark.parametrize(("options", "expected"), [
    ({}, [("batch_size", "int", 4), ("dpi", "int", 150), ("retries", "int", 1)]),
    ({"batch_size": 2, "dpi": 100, "retries": 0, "password": "x"},
     [("batch_size", "int", 2), ("dpi", "int", 100), ("retries", "int", 0)]),
])
def test_params_of_the_vision_strategy_are_unchanged(options: dict[str, Any], expected: list[tuple[str, str, Any]]) -> None:
    """Its parameters come from its engine (the model's identity first): no password, no object."""
    params = strategy_class("vision")(256, 0, llm=_callable_model, **options).params()
    model = f"callable:{__name__}._callable_model{{temperature=0.1}}"
    assert [(k, type(v).__name__, v) for k, v in params.items()] == [
        ("max_tokens", "int", 256), ("overlap", "int", 0), ("model", "str", model), *expected,
        ("prompt_sha256", "str", "3e329c937927912c")]


# -- the registry: one lazy table, one class per name -------------------------------------------------
def test_the_builtins_are_a_lazy_table_imported_one_by_one() -> None:
    """Asking for one strategy imports its module only (a fresh interpreter: this one has loaded them)."""
    code = ("import sys\nfrom grounded.chunking.base import strategy_class, strategy_names\n"
            "names = strategy_names()\nstrategy_class('fixed')\n"
            "print(sorted(m for m in sys.modules if m.startswith('grounded.chunking.strategies.')), names)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("] ")
    assert out[0] + "]" == "['grounded.chunking.strategies.fixed']"
    assert set(BUILTIN_STRATEGIES) <= set(eval(out[1]))


def test_every_builtin_entry_names_its_class() -> None:
    for name, target in BUILTIN_STRATEGIES.items():
        cls = strategy_class(name)
        assert cls.name == name and target == f"{cls.__module__}:{cls.__qualname__}", name


class _Taken(PieceStrategy):
    name = "fixed"
    piece_kind = None
    options = ()

    def split(self, pieces: Any, doc: Any) -> Any:
        return [(0, len(doc))]


def test_register_refuses_a_name_another_class_holds() -> None:
    fixed = strategy_class("fixed")
    with pytest.raises(NameTakenError) as err:
        register_strategy(_Taken)
    assert isinstance(err.value, ConfigError) and isinstance(err.value, ChunkingError)
    assert err.value.taken_by == "grounded.chunking.strategies.fixed.FixedSizeStrategy"
    assert str(err.value).startswith("strategy name 'fixed' is taken by grounded.chunking.strategies.fixed.FixedSizeStrategy")
    assert strategy_class("fixed") is fixed
    assert register_strategy(fixed) is fixed  # the class that holds the name registers again


def test_register_refuses_a_builtin_name_before_the_builtin_is_imported() -> None:
    """A registered class must not shadow a built-in that was not imported yet (fresh interpreter)."""
    code = ("from grounded.chunking.base import register_strategy\nfrom grounded.chunking.pieces import PieceStrategy\n"
            "from grounded.errors import NameTakenError\n"
            "class Mine(PieceStrategy):\n    name = 'kamradt'\n    piece_kind = None\n"
            "    def split(self, pieces, doc):\n        return []\n"
            "try:\n    register_strategy(Mine)\nexcept NameTakenError as err:\n    print(err.taken_by)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "grounded.chunking.strategies.kamradt_original.KamradtStrategy"


# -- params() from the declarations -------------------------------------------------------------------
def test_in_params_follows_the_declaration() -> None:
    assert Option("n", int).in_params and Option("s", str).in_params
    assert not Option("embedder", None).in_params and Option("delimiters", None, param=True).in_params
    assert not Option("model", str, param=False).in_params
    assert not Option("password", str, secret=True, param=True).in_params


class _Undeclared(PieceStrategy):
    name = "undeclared_attribute_test"
    piece_kind = None
    options = (Option("parts", int, 2, "equal parts", low=1),)

    def __init__(self, max_tokens: int = 256, overlap: int = 0, parts: int = 2) -> None:
        super().__init__(max_tokens, overlap)
        self.count = parts

    def split(self, pieces: Any, doc: Any) -> Any:
        return [(0, len(doc))]


def test_an_option_without_its_attribute_is_a_typed_error() -> None:
    with pytest.raises(ChunkingError, match="declares the option 'parts' but keeps no attribute 'parts'"):
        _Undeclared(64).params()


def test_params_follow_the_declaration_order_and_leave_objects_out() -> None:
    strategy = strategy_class("semantic")(64, embedder=lambda texts: None)
    assert list(strategy.params()) == ["max_tokens", "overlap", "percentile", "min_tokens", "language"]


@pytest.mark.slow
def test_the_minilm_embedder_keeps_its_fingerprint_name() -> None:
    """A ``Chunker(embedder=minilm_embedder())`` hashes the function's name: it is the one chunk ids were
    issued with before the helpers moved to grounded.chunking.nlp."""
    config = Chunker("semantic", 64, embedder=minilm_embedder(device="cpu")).config()
    assert config["embedder"] == "grounded.chunking.strategies.semantic.minilm_embedder.<locals>.embed"
    assert minilm_embedder is nlp.minilm_embedder and punkt_sentence_tokenizer is nlp.punkt_sentence_tokenizer
