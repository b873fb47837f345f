"""``GroundedTextSplitter``: grounded's chunker as a LangChain ``TextSplitter``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Literal

from langchain_core.documents import Document
from langchain_text_splitters import TextSplitter

from grounded.chunking import Chunker, ChunkingStrategy
from grounded.errors import ChunkingError
from grounded.integrations import ParseCache
from grounded.integrations.loader_parts import DocPart
from grounded.integrations.options import (
    OFFLINE_ENCODINGS,
    build_chunker,
    check_base_keywords,
    refuse_raw_bytes,
    tokenizer_for,
)
from grounded.integrations.split_parts import PartSplitter

from .loader import as_document

__all__ = ["GroundedTextSplitter"]

#: GroundedTextSplitter's own keywords (named in the error for an unknown one)
_KEYWORDS = ("chunk_size", "chunk_overlap", "strategy", "tokenizer", "box_mode", "flat_metadata", "line_boxes",
             "add_start_index", "length_function", "keep_separator", "strip_whitespace", "cache", "parse_sources")


class GroundedTextSplitter(TextSplitter):
    """Token-bounded splitting that keeps exact source boxes.

    What ``split_documents`` does with each Document of :class:`~langchain_grounded.GroundedPDFLoader`:

    * element Documents (``mode="elements"``): rebuilds each PDF's tree and chunks it (same chunks,
      ids and boxes as the loader's chunk mode when all elements are passed);
    * a single Document (``mode="single"``): chunks its parse tree (found through
      ``grounded_tree_ref``) - again the loader's chunks;
    * chunk and page Documents: a Document that fits ``chunk_size`` passes through; a larger one is
      split as text and every part gets the boxes, char offsets, pages and token count of its own
      text (from the parse tree); without the tree, parts get no boxes and one
      :class:`~grounded.metadata.GroundingWarning` - never their parent's boxes.

    Any other Document is split as plain text: ``chunk_size``/``chunk_overlap`` in tokens of
    ``tokenizer`` (default all-MiniLM-L6-v2). Every part has a deterministic id from its source
    (PDF sha256 + parser, or the parent Document), the chunking configuration and its char span.

    LangChain's keywords: ``add_start_index`` (default ``False``: ``start_index`` only when asked;
    as in LangChain, the part's offset in its parent Document's ``page_content`` - ``start_char``
    keeps its offset in the whole document text - never found with ``str.find``);
    ``length_function=len`` splits by characters (``chunk_size`` characters at most), another
    length function is refused (see
    :meth:`from_huggingface_tokenizer` / :meth:`from_tiktoken_encoder`); ``keep_separator`` must be
    ``True``/``"end"`` and ``strip_whitespace`` ``True`` (what exact slices of the source do).
    ``strategy`` is a strategy name, a strategy object or a :class:`~grounded.chunking.Chunker`.
    Metadata is flat (scalars and compact JSON strings) unless ``flat_metadata=False``.
    """

    def __init__(
        self,
        chunk_size: int | None = None,
        chunk_overlap: int | float = 0,
        *,
        strategy: str | ChunkingStrategy | Chunker = "recursive",
        tokenizer: Any = None,
        box_mode: str = "auto",
        flat_metadata: bool = True,
        line_boxes: bool = True,
        add_start_index: bool = False,
        length_function: Callable[[str], int] | None = None,
        keep_separator: bool | Literal["start", "end"] = True,
        strip_whitespace: bool = True,
        cache: ParseCache | str | Path | None = None,
        parse_sources: bool = True,
        **strategy_options: Any,
    ) -> None:
        check_base_keywords(keep_separator, strip_whitespace)
        tokenizer = tokenizer_for(length_function, tokenizer)
        self.chunker = build_chunker(
            strategy, chunk_size, chunk_overlap, tokenizer=tokenizer, box_mode=box_mode, options=strategy_options,
            owner="GroundedTextSplitter", keywords=_KEYWORDS,
        )
        super().__init__(
            chunk_size=self.chunker.max_tokens,
            chunk_overlap=self.chunker.strategy.overlap,
            length_function=self.chunker.tokenizer.count,
            keep_separator="end",
            add_start_index=add_start_index,
            strip_whitespace=True,
        )
        self.flat_metadata = flat_metadata
        self.line_boxes = line_boxes
        self.box_mode = self.chunker.box_mode
        self.cache = cache if isinstance(cache, ParseCache) or cache is None else ParseCache(cache)
        self.parse_sources = parse_sources
        from grounded.integrations.embedding import warn_long_chunk_size

        warn_long_chunk_size(type(self).__name__, self.chunker.max_tokens, self.chunker.tokenizer)

    # -- LangChain's alternative constructors --------------------------------------------------
    @classmethod
    def from_huggingface_tokenizer(cls, tokenizer: Any, **kwargs: Any) -> GroundedTextSplitter:
        """Count (and cut) in tokens of a Hugging Face tokenizer: a ``transformers`` fast tokenizer
        (``PreTrainedTokenizerFast``) or a ``tokenizers.Tokenizer``. Slow (Python) tokenizers give
        no character offsets and are refused."""
        fast = getattr(tokenizer, "backend_tokenizer", None) is not None
        raw = type(tokenizer).__module__.startswith("tokenizers") and hasattr(tokenizer, "encode_batch")
        if not (fast or raw):
            raise ChunkingError(
                f"{type(tokenizer).__name__} is not a fast tokenizer: GroundedTextSplitter needs each token's character "
                "offsets (load it with use_fast=True, or pass its tokenizers.Tokenizer)"
            )
        if "length_function" in kwargs:
            raise ChunkingError("from_huggingface_tokenizer counts with the tokenizer: do not pass length_function")
        return cls(tokenizer=tokenizer, **kwargs)

    @classmethod
    def from_tiktoken_encoder(
        cls,
        encoding_name: str = "cl100k_base",
        model_name: str | None = None,
        allowed_special: Literal["all"] | Iterable[str] | None = None,
        disallowed_special: Literal["all"] | Iterable[str] = "all",
        **kwargs: Any,
    ) -> GroundedTextSplitter:
        """Count in tokens of an OpenAI encoding, offline through ``bpe-openai`` (``cl100k_base``
        or ``o200k_base``; ``model_name`` such as ``"gpt-4o"`` picks its encoding). The default is
        ``cl100k_base`` (LangChain's ``gpt2`` would need a download). Special-token text is counted
        as ordinary text, so ``allowed_special`` must stay unset."""
        if allowed_special:
            raise ChunkingError("allowed_special cannot apply: special-token text is split and counted as ordinary text")
        del disallowed_special  # ordinary text either way
        if "length_function" in kwargs or "tokenizer" in kwargs:
            raise ChunkingError("from_tiktoken_encoder counts with the encoding: do not pass length_function or tokenizer")
        if model_name is not None:
            try:
                import bpe_openai
            except ImportError as exc:  # pragma: no cover - the tiktoken extra
                raise ChunkingError("from_tiktoken_encoder needs bpe-openai: pip install 'grounded[tiktoken]'") from exc
            try:
                encoding_name = str(bpe_openai.encoding_name_for_model(model_name))
            except Exception as exc:  # noqa: BLE001 - bpe-openai's own error types
                raise ChunkingError(f"unknown model {model_name!r} for an OpenAI encoding ({exc})") from exc
        if encoding_name not in OFFLINE_ENCODINGS:
            raise ChunkingError(
                f"encoding {encoding_name!r} is not available offline (bpe-openai ships {', '.join(OFFLINE_ENCODINGS)}); "
                "pass tokenizer=<a tiktoken Encoding object> to use another one"
            )
        return cls(tokenizer=encoding_name, **kwargs)

    # -- splitting (grounded.integrations.split_parts) ---------------------------------------------
    @property
    def _core(self) -> PartSplitter:
        return PartSplitter(
            self.chunker, flat_metadata=self.flat_metadata, line_boxes=self.line_boxes, add_start_index=self._add_start_index,
            cache=self.cache, parse_sources=self.parse_sources,
        )

    def split_text(self, text: str) -> list[str]:
        return [c.content for c in self._core.text_chunks(text)]

    def create_documents(self, texts: list[str], metadatas: list[dict[Any, Any]] | None = None) -> list[Document]:
        return [as_document(p) for p in self._core.create(texts, metadatas)]

    def split_documents(self, documents: Iterable[Document]) -> list[Document]:
        docs = list(documents)
        refuse_raw_bytes([(d.page_content, d.metadata, d.id or "a Document") for d in docs], "langchain")  # a file's raw bytes
        return [as_document(p) for p in self._core.split(DocPart(d.page_content, d.metadata, d.id) for d in docs)]
