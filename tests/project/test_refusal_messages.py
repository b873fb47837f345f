"""Issue #34 item 7: an output folder made with the default tokenizer refused a run with another
one as "--tokenizer none -> cl100k_base". A setting left at its default is named by its default."""

from __future__ import annotations

from grounded.ingest.config import config_settings, settings_difference
from grounded.ingest.worker import JobConfig


def _settings(**changes: object) -> dict[str, object]:
    return config_settings(JobConfig(**changes), chunker_fingerprint="c" * 64)  # type: ignore[arg-type]


def test_default_tokenizer_is_named_not_none() -> None:
    made, wanted = _settings(), _settings(tokenizer="cl100k_base")
    said = settings_difference(made, wanted)
    assert said == "--tokenizer all-MiniLM-L6-v2 (default) -> cl100k_base"
    assert "none" not in said
    back = settings_difference(wanted, made)
    assert back == "--tokenizer cl100k_base -> all-MiniLM-L6-v2 (default)"


def test_other_defaults_are_named_too() -> None:
    said = settings_difference(_settings(box_mode="line"), _settings())
    assert said == "--box-mode line -> auto (default)"
    said = settings_difference(_settings(), _settings(max_tokens=128, embed="minilm"))
    assert said == "-n/--max-tokens 256 -> 128, --embed none -> minilm"  # "none" is a real --embed value
