"""The strategy registry and the strategies' parameters (issue 30, item 4).

A strategy's ``params()`` enter every chunk's metadata and the chunker fingerprint (so every chunk
id): the table below holds what each built-in strategy returned before ``params()`` was derived from
the ``Option`` declarations, key order and value types included, and the chunker fingerprints of
the same configurations. Any difference changes stored chunk ids."""

from __future__ import annotations

from typing import Any

import pytest

from grounded.chunking import Chunker
from grounded.chunking.base import strategy_class

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
