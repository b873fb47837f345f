"""A splitter's options: the chunker they make (:func:`build_chunker`, the one rule both adapters
follow), the keywords and aliases a framework's splitter takes, how a setting is written when the
splitter is serialized, and the input checks every grounded splitter makes before it cuts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..chunking.base import ChunkingStrategy, strategy_class
from ..chunking.chunker import Chunker
from ..errors import ChunkingError, OptionError
from ..grounding.raw_text import refuse_raw_bytes
from ..text.assembly import BOX_MODES
from ..text.tokenizer import OFFLINE_ENCODINGS, CallableTokenizer, Tokenizer

__all__ = [
    "build_chunker", "check_box_mode", "check_strategy_size", "ALIASES", "aliased", "sort_keywords", "chunker_fields", "check_fields",
    "setting_identity", "without_defaults", "tokenizer_for", "check_base_keywords", "refuse_raw_bytes", "OFFLINE_ENCODINGS",
]


def check_box_mode(box_mode: str) -> None:
    """A :class:`~grounded.errors.ChunkingError` for a box mode the assembler does not know."""
    if box_mode not in BOX_MODES:
        raise ChunkingError(f"box_mode must be one of {BOX_MODES}, got {box_mode!r}")


def check_strategy_size(strategy: ChunkingStrategy, max_tokens: int) -> None:
    """A :class:`~grounded.errors.ChunkingError` when a splitter's size is not its strategy object's
    (an object has one size: a new size takes a new object, or a strategy name)."""
    if max_tokens != strategy.max_tokens:
        raise ChunkingError(
            f"max_tokens={max_tokens} differs from the given {type(strategy).__name__} (max_tokens={strategy.max_tokens}); "
            "pass a new strategy object or a strategy name"
        )


def _not_a_strategy(strategy: Any) -> ChunkingError:
    return ChunkingError(f"strategy must be a name, a ChunkingStrategy or a Chunker, got {type(strategy).__name__}")


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
    check_box_mode(box_mode)
    if isinstance(strategy, Chunker):
        if tokenizer is not None or options or box_mode != "auto" or overlap:
            raise ChunkingError("a Chunker carries its own tokenizer, box mode, overlap and options: pass only chunk_size (or nothing)")
        if max_tokens is not None and max_tokens != strategy.max_tokens:
            raise ChunkingError(f"chunk_size={max_tokens} differs from the Chunker's max_tokens={strategy.max_tokens}")
        return strategy
    if isinstance(strategy, ChunkingStrategy):
        if max_tokens is not None:
            check_strategy_size(strategy, max_tokens)
        if overlap and overlap != strategy.overlap:
            raise ChunkingError("a strategy object carries its own overlap: do not pass chunk_overlap")
        if options:
            raise ChunkingError("strategy options cannot be combined with a strategy object")
        return Chunker(strategy, tokenizer=tokenizer, box_mode=box_mode)
    if not isinstance(strategy, str):
        raise _not_a_strategy(strategy)
    declared = strategy_class(strategy).options
    unknown = set(options) - {o.name for o in declared or ()}
    if declared is not None and unknown:
        accepted = ", ".join(o.name for o in declared) or "(none)"
        raise OptionError(
            f"strategy {strategy!r}", ", ".join(sorted(unknown)),
            f"is not a keyword of {owner}; it accepts {', '.join(keywords)} and the options of strategy {strategy!r}: {accepted}",
        )
    return Chunker(strategy, 256 if max_tokens is None else max_tokens, overlap, tokenizer=tokenizer, box_mode=box_mode, **options)


#: LlamaIndex's names of two fields
ALIASES = {"chunk_size": "max_tokens", "chunk_overlap": "overlap"}


# -- configuration ---------------------------------------------------------------------------------
def sort_keywords(data: dict[str, Any], known: set[str], owner: str) -> dict[str, Any]:
    """Strategy keywords go to ``strategy_options``; anything else unknown is refused, naming what
    ``owner`` accepts (``known``: its fields)."""
    unknown = [k for k in data if k not in known and k not in ALIASES]
    if not unknown:
        return data
    strategy = data.get("strategy", "recursive")
    accepted: set[str] = set()
    if isinstance(strategy, str):  # the strategy's declared options (an undeclared one: all, checked by its class)
        try:
            declared = strategy_class(strategy).options
            accepted = set(unknown) if declared is None else {o.name for o in declared}
        except ChunkingError:
            accepted = set()
    bad = [k for k in unknown if k not in accepted]
    if bad:
        valid = sorted((known - {"callback_manager"}) | set(ALIASES) | accepted)
        raise ChunkingError(f"{owner} got unknown keyword(s) {', '.join(sorted(bad))}; valid keywords: {', '.join(valid)}")
    options = dict(data.get("strategy_options") or {})
    options.update({k: data.pop(k) for k in unknown})
    data["strategy_options"] = options
    return data


def chunker_fields(data: dict[str, Any]) -> dict[str, Any]:
    """The fields of a given ``chunker=`` / ``strategy=<Chunker>`` (its strategy, tokenizer, box mode,
    size, overlap) or of a strategy object (its size and overlap, unless given alike)."""
    data.pop("fingerprint", None)  # derived, written by to_dict
    given = data.pop("chunker", None)
    if isinstance(data.get("strategy"), Chunker):
        given = data["strategy"]
    if given is not None:
        if not isinstance(given, Chunker):
            raise ChunkingError(f"chunker must be a grounded Chunker, got {type(given).__name__}")
        data.update(
            strategy=given.strategy, tokenizer=given.tokenizer, box_mode=given.box_mode,
            max_tokens=given.strategy.max_tokens, overlap=given.strategy.overlap,
        )
    strategy = data.get("strategy")
    if isinstance(strategy, ChunkingStrategy):  # its size is the parser's size
        size = data.get("max_tokens", data.get("chunk_size", strategy.max_tokens))
        check_strategy_size(strategy, size)
        if "max_tokens" not in data and "chunk_size" not in data:
            data["max_tokens"] = strategy.max_tokens
        if "overlap" not in data and "chunk_overlap" not in data:
            data["overlap"] = strategy.overlap
    check_box_mode(data.get("box_mode", "auto"))
    return data


def check_fields(strategy: Any, max_tokens: int, overlap: int | float, box_mode: str) -> None:
    """The fields agree (checked again on every assignment)."""
    check_box_mode(box_mode)
    if isinstance(strategy, ChunkingStrategy):
        if strategy.max_tokens != max_tokens or (isinstance(overlap, int) and overlap and strategy.overlap != overlap):
            raise ChunkingError(
                f"max_tokens={max_tokens}/overlap={overlap} differ from the given {type(strategy).__name__} "
                f"(max_tokens={strategy.max_tokens}, overlap={strategy.overlap}); pass a new strategy object "
                "or a strategy name"
            )
    elif not isinstance(strategy, str):
        raise _not_a_strategy(strategy)


def setting_identity(value: Any) -> Any:
    """How a strategy or tokenizer setting is written in a serialized parser: scalars as they are,
    a strategy object as its name, class and parameters, a tokenizer as its description, anything
    else as its class path."""
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, ChunkingStrategy):
        return {"name": value.name, "class": type(value).__qualname__, **value.params()}
    if isinstance(value, Tokenizer):
        return value.describe()
    return f"{type(value).__module__}.{type(value).__qualname__}"


def without_defaults(entry: Any, defaults: Mapping[str, Any], class_name: str | None = None) -> Any:
    """A serialized record (a dict) without the fields that hold their ``defaults`` and without
    its constant ``class_name``: reading it back by its field type restores exactly those values."""
    if not isinstance(entry, dict):
        return entry
    out = {name: value for name, value in entry.items() if name not in defaults or value != defaults[name]}
    if class_name is not None and out.get("class_name") == class_name:
        del out["class_name"]
    return out


def aliased(name: str, value: Any, alias: str, alias_value: Any, default: Any) -> Any:
    """``value`` or its LangChain spelling ``alias`` (``chunk_size`` / ``chunk_overlap``, as the
    splitters take them); both given with different values is a :class:`~grounded.errors.ChunkingError`."""
    if alias_value is None:
        return default if value is None else value
    if value is not None and value != alias_value:
        raise ChunkingError(f"{name}={value!r} and {alias}={alias_value!r} contradict each other: pass one of them")
    return alias_value


_LENGTH_FUNCTION = (
    "length_function cannot drive GroundedTextSplitter: chunks are cut at token boundaries and every "
    "token's character offsets give exact start_index, char spans and boxes, while a length function "
    "only counts. Pass tokenizer= (a tokenizers.Tokenizer, a Hugging Face fast tokenizer, "
    "'cl100k_base', a tokenizer.json path or a callable returning token spans), or use "
    "GroundedTextSplitter.from_huggingface_tokenizer / from_tiktoken_encoder; length_function=len "
    "splits by characters."
)


def _characters(text: str) -> list[tuple[int, int]]:
    """Every character is one token (``length_function=len``). A whitespace character is an empty
    token right after the text before it (before the first word: where the first word begins), so
    chunks never end - and, cut after a delimiter, never begin - with whitespace."""
    out: list[tuple[int, int]] = []
    stripped = text.lstrip()
    last = len(text) - len(stripped)  # leading whitespace: empty tokens where the text begins
    for i, char in enumerate(text):
        if char.isspace():
            out.append((last, last))
        else:
            out.append((i, i + 1))
            last = i + 1
    return out


def tokenizer_for(length_function: Callable[[str], int] | None, tokenizer: Any) -> Any:
    if length_function is None:
        return tokenizer
    if tokenizer is not None:
        raise ChunkingError("pass tokenizer= or length_function=, not both (the tokenizer counts the length)")
    if length_function is len:
        return CallableTokenizer(_characters, name="characters")
    owner = getattr(length_function, "__self__", None)
    if isinstance(owner, Tokenizer) and getattr(length_function, "__name__", "") == "count":
        return owner
    raise ChunkingError(_LENGTH_FUNCTION)


def check_base_keywords(keep_separator: Any, strip_whitespace: Any) -> None:
    if keep_separator not in (True, "end"):
        raise ChunkingError(
            f"keep_separator={keep_separator!r} cannot apply: grounded chunks are exact slices of the source text "
            "(exact offsets and boxes), so a separator is never dropped or moved; it stays at the end of the chunk "
            "it closes (keep_separator=True or 'end')"
        )
    if strip_whitespace is not True:
        raise ChunkingError(
            "strip_whitespace=False cannot apply: chunks are token spans of the source text and whitespace at "
            "their edges belongs to no token, so it is never part of a chunk"
        )
