"""The adapter core: everything the LlamaIndex and LangChain adapters use of grounded, in one module.

``llama_index_grounded`` and ``langchain_grounded`` import this module and grounded's public API
(``grounded.errors``, ``grounded.model``, ``grounded.search``, ``grounded.graph``) only, so a change
inside the core reaches a framework integration through one door, checked by
``tests/project/test_architecture.py``. What lives here besides the re-exports is the part both
adapters share and no framework decides: building a chunker from the options a splitter takes.

The pieces: the PDF behind a Document (:mod:`.sources`: :class:`SourceView`), the boxes of any
node/Document/hit (:mod:`.stored`), the grounding loop (:mod:`.wrappers`), blocks and page runs
(:mod:`.blocks`), the chunk field table and metadata codecs (:mod:`grounded.io`), the parse cache.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..chunking.base import ChunkingStrategy, strategy_class
from ..chunking.chunker import Chunker
from ..chunking.nlp import minilm_embedder
from ..errors import ChunkingError, OptionError
from ..io.box_codec import (
    BOXES_KEY,
    TEXT_HASH_KEY,
    GroundingWarning,
    boxes_from_metadata,
    boxes_to_metadata,
    text_hash,
)
from ..io.chunk_codec import (
    PAYLOAD_KEYS,
    chunk_metadata,
    flatten_metadata,
    part_fields,
    part_metadata,
    unflatten_metadata,
)
from ..io.pdf_info import PDF_METADATA_KEYS, pdf_metadata
from ..io.tree_payload import TREE_KEY, source_info, text_tree
from ..model.chunk_fields import STORED_KEYS, embed_hidden_keys, llm_hidden_keys, resplit_keys
from ..parsers import BaseParser, get_parser, parser_class, public_options
from ..parsers.cache import PARSER_OPTIONS_KEY, TREE_REF_KEY, ParseCache, cached_parse, with_ocr
from ..parsers.ocr.engine import OCRMode
from ..runtime.bounded import BoundedCache
from ..runtime.device import check_device
from ..runtime.optional import require
from ..text.assembly import BOX_MODES
from ..text.embed_input import EmbeddingInputWarning, warn_long_chunk_size, warn_long_texts
from ..text.ids import chunk_id, repeat_id, source_key, stable_hash, text_key
from ..text.stream import document_text
from ..text.tokenizer import OFFLINE_ENCODINGS, CallableTokenizer, Tokenizer, load_tokenizer
from .blocks import ELEMENT_KEY, Block, iter_blocks, page_runs, tree_from_payloads
from .documents import KIND_KEY, PAGE_JOINER, SOURCE_KEYS, SPANS_KEY, DocPart, page_keys
from .loading import (
    MODES,
    LoaderPipeline,
    ParserChoice,
    PDFInput,
    aliased,
    given_parser,
    pdf_inputs,
    read_input,
)
from .nodes import (
    CHUNK_KEYS,
    GROUNDING_HIDDEN,
    NodeChunker,
    check_fields,
    chunker_fields,
    file_info,
    grounded_node_fields,
    hidden_keys,
    keep_unique,
    node_text_and_metadata,
    same_node_part,
    section_of,
    setting_identity,
    sort_keywords,
    without_defaults,
)
from .raw_text import refuse_raw_bytes
from .reader_documents import (
    DOCUMENT_KEYS,
    LLM_VISIBLE_KEYS,
    ReaderPart,
    pdf_source,
    read_stream,
    reader_parts,
)
from .sources import (
    PAGE_KEY,
    SourceView,
    document_view,
    locate,
    names_pdf,
    names_source,
    near_of,
    page_tree,
    source_view,
)
from .splitting import PartSplitter, check_base_keywords, tokenizer_for
from .stored import (
    FOCUS_KEYS,
    boxes_of,
    chunk_of,
    focus_metadata,
    ground_in_view,
    ground_parts,
    hit_fields,
    own_part_metadata,
    warn_refused,
)
from .wrappers import GROUNDING_KEYS, ground_texts, refused_texts, splitter_fingerprint, with_grounding

__all__ = [
    "BOXES_KEY", "BOX_MODES", "Block", "BoundedCache", "CallableTokenizer", "Chunker", "ChunkingStrategy", "ELEMENT_KEY",
    "GROUNDING_KEYS", "GroundingWarning", "OCRMode", "OFFLINE_ENCODINGS", "PAGE_KEY", "PARSER_OPTIONS_KEY", "PAYLOAD_KEYS",
    "PDF_METADATA_KEYS", "ParseCache", "BaseParser", "STORED_KEYS", "SourceView", "TEXT_HASH_KEY", "TREE_KEY", "TREE_REF_KEY",
    "Tokenizer", "boxes_from_metadata", "boxes_of", "boxes_to_metadata", "build_chunker", "cached_parse", "chunk_id",
    "chunk_metadata", "chunk_of", "document_text", "document_view", "embed_hidden_keys", "flatten_metadata", "get_parser",
    "ground_texts", "refuse_raw_bytes", "same_node_part", "iter_blocks", "llm_hidden_keys", "load_tokenizer", "locate", "names_pdf", "names_source", "near_of", "page_runs",
    "page_tree", "parser_class", "part_fields", "part_metadata", "pdf_metadata", "public_options",
    "refused_texts", "repeat_id", "require", "resplit_keys", "source_info", "source_key", "source_view",
    "splitter_fingerprint", "stable_hash", "strategy_class", "text_hash", "text_key", "text_tree", "tree_from_payloads",
    "unflatten_metadata", "with_grounding", "with_ocr", "EmbeddingInputWarning", "warn_long_chunk_size", "warn_long_texts",
    "check_device", "minilm_embedder", "ground_in_view", "ground_parts", "warn_refused", "hit_fields", "focus_metadata", "FOCUS_KEYS", "own_part_metadata", "grounded_node_fields", "GROUNDING_HIDDEN",
    "KIND_KEY", "PAGE_JOINER", "SOURCE_KEYS", "SPANS_KEY", "DocPart", "page_keys", "MODES", "LoaderPipeline", "PDFInput",
    "aliased", "pdf_inputs", "read_input", "ParserChoice", "given_parser", "PartSplitter", "check_base_keywords", "tokenizer_for",
    "CHUNK_KEYS", "NodeChunker", "check_fields", "chunker_fields", "file_info", "hidden_keys",
    "node_text_and_metadata", "section_of", "sort_keywords", "keep_unique", "setting_identity", "without_defaults",
    "DOCUMENT_KEYS", "LLM_VISIBLE_KEYS", "ReaderPart", "pdf_source", "read_stream", "reader_parts",
]


def build_chunker(
    strategy: str | ChunkingStrategy | Chunker,
    max_tokens: int | None,
    overlap: int | float,
    *,
    tokenizer: Any = None,
    box_mode: str = "auto",
    options: Mapping[str, Any] | None = None,
    owner: str = "the splitter",
    keywords: tuple[str, ...] = (),
) -> Chunker:
    """The chunker of a splitter's options - the one rule both adapters follow:

    * a built :class:`~grounded.chunking.Chunker` carries its tokenizer, box mode, overlap and
      options (only a matching ``max_tokens`` may be given);
    * a strategy object carries its size and overlap (a different ``max_tokens`` or any ``overlap``
      is refused: pass a new object or a name);
    * a strategy name takes ``max_tokens`` (default 256), ``overlap`` and the strategy's declared
      options; an option it does not declare is an :class:`~grounded.errors.OptionError` naming what
      ``owner`` accepts (its own ``keywords`` and the strategy's options).
    """
    options = dict(options or {})
    if box_mode not in BOX_MODES:
        raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")
    if isinstance(strategy, Chunker):
        if tokenizer is not None or options or box_mode != "auto" or overlap:
            raise ChunkingError("a Chunker carries its own tokenizer, box mode, overlap and options: pass only chunk_size (or nothing)")
        if max_tokens is not None and max_tokens != strategy.max_tokens:
            raise ChunkingError(f"chunk_size={max_tokens} differs from the Chunker's max_tokens={strategy.max_tokens}")
        return strategy
    if isinstance(strategy, ChunkingStrategy):
        if max_tokens is not None and max_tokens != strategy.max_tokens:
            raise ChunkingError(
                f"max_tokens={max_tokens} differs from the given {type(strategy).__name__} (max_tokens={strategy.max_tokens}); "
                "pass a new strategy object or a strategy name"
            )
        if overlap and overlap != strategy.overlap:
            raise ChunkingError("a strategy object carries its own overlap: do not pass chunk_overlap")
        if options:
            raise ChunkingError("strategy options cannot be combined with a strategy object")
        return Chunker(strategy, tokenizer=tokenizer, box_mode=box_mode)
    if not isinstance(strategy, str):
        raise ChunkingError(f"strategy must be a name, a ChunkingStrategy or a Chunker, got {type(strategy).__name__}")
    declared = strategy_class(strategy).options
    unknown = set(options) - {o.name for o in declared or ()}
    if declared is not None and unknown:
        accepted = ", ".join(o.name for o in declared) or "(none)"
        raise OptionError(
            f"strategy {strategy!r}", ", ".join(sorted(unknown)),
            f"is not a keyword of {owner}; it accepts {', '.join(keywords)} and the options of strategy {strategy!r}: {accepted}",
        )
    return Chunker(strategy, 256 if max_tokens is None else max_tokens, overlap, tokenizer=tokenizer, box_mode=box_mode, **options)
