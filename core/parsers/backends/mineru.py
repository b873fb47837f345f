"""``mineru_pipeline`` and ``mineru_vlm`` backends: MinerU 2.5+ through its ``mineru`` CLI.

MinerU writes ``<stem>_middle.json`` (the structure the transform reads), ``<stem>.md`` and
``<stem>_content_list.json`` into an output folder; the native object is those outputs
(:class:`MinerUOutput`). Needs the ``mineru`` extra (``pip install 'grounded[mineru]'``);
MinerU downloads its models on first use (``MINERU_MODEL_SOURCE`` = huggingface/modelscope/local).

* ``mineru_pipeline``: ``mineru -b pipeline`` (layout model + OCR/formula/table models; CPU ok).
* ``mineru_vlm``: MinerU2.5 VLM, ``-b vlm-mlx-engine`` on Apple silicon when ``mlx-vlm`` is
  installed, else ``-b vlm-transformers`` (a GPU is strongly advised).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from grounded.errors import ParserError
from grounded.model.elements import ParsingResult, ParsingResultType
from grounded.model.options import Option
from grounded.runtime.optional import available, require

from ..base import BaseParser
from ._mineru_tree import MINERU_LABEL_MAP, mineru_to_tree

__all__ = ["MinerUOutput", "MinerUPipelineParser", "MinerUVLMParser", "mineru_command"]

log = logging.getLogger(__name__)

#: ``runner(pdf_path, out_dir, backend)`` writes MinerU's outputs for ``pdf_path`` below ``out_dir``
Runner = Callable[[Path, Path, str], None]


@dataclass
class MinerUOutput:
    """MinerU's outputs for one PDF: ``middle`` (middle.json dict), its Markdown and content list."""

    middle: dict[str, Any]
    markdown: str | None = None
    content_list: list[dict[str, Any]] | None = None

    @classmethod
    def from_files(
        cls, middle: str | Path, markdown: str | Path | None = None, content_list: str | Path | None = None
    ) -> MinerUOutput:
        def read_json(path: Path) -> Any:
            try:
                return json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise ParserError(path, f"not a readable MinerU JSON output: {exc}") from exc

        middle_path = Path(middle)
        data = read_json(middle_path)
        if not isinstance(data, dict) or not isinstance(data.get("pdf_info"), list):
            raise ParserError(middle_path, "not a MinerU middle.json (no 'pdf_info' list)")
        md = None
        if markdown is not None:
            try:
                md = Path(markdown).read_text(encoding="utf-8")
            except OSError as exc:
                raise ParserError(markdown, f"cannot read MinerU Markdown: {exc}") from exc
        cl = read_json(Path(content_list)) if content_list is not None else None
        return cls(data, md, cl)

    @classmethod
    def from_dir(cls, directory: str | Path) -> MinerUOutput:
        """Find ``*_middle.json`` (and its ``.md`` / ``_content_list.json``) anywhere below ``directory``."""
        root = Path(directory)
        found = sorted(root.rglob("*_middle.json"))
        if not found:
            raise ParserError(root, "MinerU wrote no *_middle.json")
        if len(found) > 1:
            log.warning("several MinerU outputs below %s; using %s", root, found[0])
        middle = found[0]
        stem = middle.name[: -len("_middle.json")]
        md = middle.with_name(f"{stem}.md")
        cl = middle.with_name(f"{stem}_content_list.json")
        return cls.from_files(middle, md if md.exists() else None, cl if cl.exists() else None)


def mineru_command() -> list[str] | None:
    """How to start the MinerU CLI here (None when MinerU is not installed)."""
    exe = shutil.which("mineru")
    if exe:
        return [exe]
    if available("mineru"):
        return [sys.executable, "-m", "mineru.cli.client"]
    return None


def _apple_silicon() -> bool:
    return platform.system() == "Darwin" and platform.machine() in ("arm64", "aarch64")


class _MinerUParser(BaseParser):
    """Shared MinerU logic; subclasses choose the backend."""

    LABEL_MAP: ClassVar[dict[str, ParsingResultType]] = MINERU_LABEL_MAP
    _what: ClassVar[str] = "MinerU parser"

    options: ClassVar[tuple[Option, ...] | None] = (
        Option("lang", str, None, "OCR language of MinerU", cli=False),
        Option("formula", bool, True, "MinerU's formula recognition", cli=False),
        Option("table", bool, True, "MinerU's table recognition", cli=False),
        Option("discarded", bool, False, "keep the blocks MinerU discards", cli=False),
        Option("timeout", float, 3600.0, "seconds the MinerU process may run", low=0.0, open_low=True, cli=False),
        Option("extra_args", None, help="further command-line arguments of the mineru call"),
        Option("runner", None, help="runs the mineru command (default: a subprocess)"),
    )

    def __init__(
        self,
        *,
        backend: str,
        lang: str | None = None,
        formula: bool = True,
        table: bool = True,
        discarded: bool = False,
        timeout: float | None = 3600.0,
        extra_args: Sequence[str] = (),
        runner: Runner | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.backend = backend
        self.lang = lang
        self.formula = formula
        self.table = table
        self.discarded = discarded
        self.timeout = timeout
        self.extra_args = list(extra_args)
        self._runner = runner
        if runner is None and shutil.which("mineru") is None:
            require("mineru", extra="mineru", what=self._what)

    # -- running the tool -------------------------------------------------------------------------
    def _cli_args(self, pdf_path: Path, out_dir: Path) -> list[str]:
        cmd = list(mineru_command() or ["mineru"])
        cmd += ["-p", str(pdf_path), "-o", str(out_dir), "-b", self.backend]
        if self.lang:
            cmd += ["-l", self.lang]
        cmd += ["-f", str(self.formula).lower(), "-t", str(self.table).lower()]
        return cmd + self.extra_args

    def _run_cli(self, pdf_path: Path, out_dir: Path, backend: str) -> None:
        cmd = self._cli_args(pdf_path, out_dir)
        log.info("running %s", " ".join(cmd))
        try:
            proc = subprocess.run(
                cmd, capture_output=True, text=True, timeout=self.timeout, env=os.environ.copy()
            )
        except subprocess.TimeoutExpired as exc:
            raise ParserError(pdf_path, f"MinerU ({backend}) timed out after {self.timeout} s") from exc
        except OSError as exc:
            raise ParserError(pdf_path, f"cannot start MinerU: {exc}") from exc
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-3:]
            raise ParserError(
                pdf_path, f"MinerU ({backend}) exited with {proc.returncode}: {' | '.join(tail)}"
            )

    def _parse(self, pdf_path: Path) -> MinerUOutput:
        with tempfile.TemporaryDirectory(prefix="grounded-mineru-") as tmp:
            out_dir = Path(tmp)
            (self._runner or self._run_cli)(pdf_path, out_dir, self.backend)
            try:
                return MinerUOutput.from_dir(out_dir)
            except ParserError as exc:
                raise ParserError(
                    pdf_path, f"MinerU ({self.backend}) produced no usable output: {exc.cause}"
                ) from exc

    # -- native -> tree -------------------------------------------------------------------------
    def _transform(self, native: MinerUOutput) -> ParsingResult:
        return mineru_to_tree(native.middle, self.label_map, discarded=self.discarded)

    def _get_md(self, native: MinerUOutput) -> str | None:
        """MinerU's own ``<stem>.md`` (its renderer of the middle.json); None (the tree is rendered)
        when the output has none."""
        return native.markdown

    @classmethod
    def load_native(cls, path: str | Path) -> MinerUOutput:
        """Recorded MinerU outputs: a ``<stem>_middle.json`` (its ``<stem>.md`` and
        ``<stem>_content_list.json`` next to it are read too) or a folder MinerU wrote them into."""
        source = Path(path)
        if source.is_dir():
            return MinerUOutput.from_dir(source)
        stem = source.name[: -len("_middle.json")] if source.name.endswith("_middle.json") else None
        md = source.with_name(f"{stem}.md") if stem else None
        cl = source.with_name(f"{stem}_content_list.json") if stem else None
        return MinerUOutput.from_files(
            source, md if md and md.exists() else None, cl if cl and cl.exists() else None
        )

    def version(self) -> str:
        try:
            return f"mineru {importlib.metadata.version('mineru')} ({self.backend})"
        except importlib.metadata.PackageNotFoundError:
            return f"unknown ({self.backend})"


class MinerUPipelineParser(_MinerUParser):
    """MinerU pipeline backend (``mineru -b pipeline -m METHOD``; METHOD = auto | txt | ocr)."""

    name = "mineru_pipeline"
    _what = "MinerU pipeline parser"

    options = (Option("method", str, "auto", "MinerU's pipeline method", choices=("auto", "txt", "ocr"), cli=False),)

    def __init__(self, *, method: str = "auto", **kwargs: Any) -> None:
        if method not in ("auto", "txt", "ocr"):
            raise ValueError("method must be 'auto', 'txt' or 'ocr'")
        self.method = method
        super().__init__(backend="pipeline", **kwargs)

    def _cli_args(self, pdf_path: Path, out_dir: Path) -> list[str]:
        return super()._cli_args(pdf_path, out_dir) + ["-m", self.method]


class MinerUVLMParser(_MinerUParser):
    """MinerU2.5 VLM backend (``vlm-mlx-engine`` on Apple silicon with mlx-vlm, else ``vlm-transformers``;
    any other MinerU VLM backend name, e.g. ``vlm-vllm-engine`` or ``vlm-http-client``, may be given)."""

    name = "mineru_vlm"
    _what = "MinerU VLM parser"

    options = (
        Option("backend", str, "auto", "MinerU's VLM backend", cli=False),
        Option("server_url", str, None, "URL of a VLM server (the http-client backend)", cli=False),
    )

    def __init__(self, *, backend: str = "auto", server_url: str | None = None, **kwargs: Any) -> None:
        if backend == "auto":
            backend = (
                "vlm-mlx-engine"
                if _apple_silicon() and available("mlx_vlm")
                else "vlm-transformers"
            )
        if not backend.startswith("vlm-"):
            raise ValueError(f"MinerU VLM backend must start with 'vlm-', got {backend!r}")
        self.server_url = server_url
        super().__init__(backend=backend, **kwargs)

    def _cli_args(self, pdf_path: Path, out_dir: Path) -> list[str]:
        args = super()._cli_args(pdf_path, out_dir)
        return args + (["-u", self.server_url] if self.server_url else [])
