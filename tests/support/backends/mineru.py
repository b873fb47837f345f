"""Shared by tests: helpers formerly at the top of test_backend_mineru.py."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pymupdf

from grounded.model import ParsingResult, ParsingResultType
from grounded.parsers.backends.mineru import MinerUOutput, MinerUPipelineParser, MinerUVLMParser
from tests.support.cloud_fixtures import RAW
from tests.support.data import shared

T = ParsingResultType


PIPELINE = ("native", "mineru", "pipeline_2.7.6")


LEGACY = ("native", "mineru", "legacy_magic-pdf_0.7.0b1")


def norm(text: str) -> str:
    return " ".join(text.split())


def copying_runner(files: dict[str, Path | dict[str, Any]], method_dir: str = "auto"):
    """A MinerU stand-in: writes the given outputs where ``mineru -o OUT`` puts them."""

    def run(pdf: Path, out_dir: Path, backend: str) -> None:
        target = out_dir / pdf.stem / method_dir
        target.mkdir(parents=True)
        for suffix, source in files.items():
            dest = target / f"{pdf.stem}{suffix}"
            if isinstance(source, dict):
                dest.write_text(json.dumps(source), encoding="utf-8")
            else:
                shutil.copy(source, dest)

    return run


def pipeline_output() -> MinerUOutput:
    """The recorded 2.7.6 output: the middle.json, with its .md and content list found next to it."""
    return MinerUPipelineParser.load_native(shared(*PIPELINE, "aaai26_22735_middle.json"))


def pipeline_parser(**kwargs: Any) -> MinerUPipelineParser:
    return MinerUPipelineParser(runner=copying_runner({}), **kwargs)


def replay(parser: MinerUPipelineParser | MinerUVLMParser, native: MinerUOutput, pdf: Path) -> ParsingResult:
    """``parser``'s transform of ``native`` via ``parse_native`` (build ``parser`` with RAW options)."""
    return parser.parse_native(native, pdf).root


def pipeline_tree(pdf: Path, **kwargs: Any) -> ParsingResult:
    return replay(pipeline_parser(**RAW, **kwargs), pipeline_output(), pdf)


# -- VLM: a middle.json built to the documented schema from a real PDF ---------------------------------
_REF_START = re.compile(r"^\d{1,3} [A-Z]")


def _block_text(block: dict[str, Any]) -> str:
    return norm(" ".join("".join(s["text"] for s in line["spans"]) for line in block["lines"]))


def _int_box(bbox: tuple[float, ...]) -> list[int]:
    return [round(v) for v in bbox]


def _vlm_block(kind: str, bbox: list[int], text: str, index: int, **extra: Any) -> dict[str, Any]:
    span = {"bbox": bbox, "type": "text", "content": text}
    return {"type": kind, "bbox": bbox, "angle": extra.pop("angle", 0), "index": index,
            "lines": [{"bbox": bbox, "spans": [span]}], **extra}  # fmt: skip


def vlm_middle_from_pdf(pdf_path: Path) -> tuple[dict[str, Any], list[tuple[str, str, int, list[int]]]]:
    """Re-encode the PDF text layer as a MinerU 2.5 VLM middle.json (output_files.md schema:
    list/code level-1 blocks with level-2 ``blocks``, ``angle`` on every block, header/footer/
    aside_text in ``discarded_blocks``, boxes in points) and return the expected elements
    ``(type, text, page, int box)`` in reading order."""
    pdf_info, expected = [], []
    index = 0
    in_references = False
    with pymupdf.open(pdf_path) as doc:
        for page in doc:
            w, h = page.rect.width, page.rect.height
            para, discarded = [], []
            last_image = None
            for block in page.get_text("dict")["blocks"]:
                bbox = _int_box(block["bbox"])
                index += 1
                if block["type"] == 1:
                    if (bbox[2] - bbox[0]) * (bbox[3] - bbox[1]) < 2000 or bbox[3] > h - 40:
                        continue  # logos and the licence banner
                    body = {"type": "image_body", "bbox": bbox, "angle": 0, "index": index,
                            "lines": [{"bbox": bbox, "spans": [{"bbox": bbox, "type": "image", "image_path": f"p{page.number}_{index}.jpg"}]}]}  # fmt: skip
                    last_image = {"type": "image", "bbox": bbox, "angle": 0, "index": index, "blocks": [body]}
                    para.append(last_image)
                    expected.append(("FIGURE", "", page.number + 1, bbox))
                    continue
                text = _block_text(block)
                if not text:
                    continue
                line_dir = block["lines"][0]["dir"]
                if abs(line_dir[0]) < 0.5:  # vertical margin text
                    discarded.append(_vlm_block("aside_text", bbox, text, index, angle=90))
                    continue
                if bbox[1] < 45 or bbox[3] > h - 30:
                    discarded.append(_vlm_block("header" if bbox[1] < 45 else "footer", bbox, text, index))
                    continue
                size = max(s["size"] for line in block["lines"] for s in line["spans"])
                if text.startswith(("Figure ", "Scheme ")) and last_image is not None:
                    last_image["blocks"].append(_vlm_block("image_caption", bbox, text, index))
                    expected.append(("CAPTION", text, page.number + 1, bbox))
                    continue
                last_image = None
                if size >= 9.5 and len(text) < 120 and len(block["lines"]) <= 3:
                    level = 1 if size >= 20 else 2
                    para.append(_vlm_block("title", bbox, text, index, level=level))
                    expected.append(("SECTION_HEADER", text, page.number + 1, bbox))
                    in_references = text.upper() == "REFERENCES"
                    continue
                if in_references:  # bibliography: a ref_text list, one level-2 block per entry
                    items: list[list[dict[str, Any]]] = []
                    for line in block["lines"]:
                        line_text = norm("".join(s["text"] for s in line["spans"]))
                        if not items or _REF_START.match(line_text):
                            items.append([])
                        items[-1].append(line)
                    blocks = []
                    for lines in items:
                        ibox = _int_box((min(ln["bbox"][0] for ln in lines), min(ln["bbox"][1] for ln in lines),
                                         max(ln["bbox"][2] for ln in lines), max(ln["bbox"][3] for ln in lines)))  # fmt: skip
                        itext = _block_text({"lines": lines})
                        blocks.append(_vlm_block("text", ibox, itext, index))
                        expected.append(("REFERENCE_ITEM", itext, page.number + 1, ibox))
                    para.append(
                        {
                            "type": "list",
                            "sub_type": "ref_text",
                            "bbox": bbox,
                            "angle": 0,
                            "index": index,
                            "blocks": blocks,
                        }
                    )
                    expected.insert(
                        len(expected) - len(blocks), ("REFERENCE_LIST", "", page.number + 1, bbox)
                    )
                    continue
                para.append(_vlm_block("text", bbox, text, index))
                expected.append(("PARAGRAPH", text, page.number + 1, bbox))
            pdf_info.append(
                {
                    "page_idx": page.number,
                    "page_size": [w, h],
                    "para_blocks": para,
                    "discarded_blocks": discarded,
                }
            )
    return {"pdf_info": pdf_info, "_backend": "vlm", "_version_name": "2.5.4"}, expected


def vlm_parser(middle: dict[str, Any] | None = None, **kwargs: Any) -> MinerUVLMParser:
    return MinerUVLMParser(runner=copying_runner({"_middle.json": middle or {}}, "vlm"), **kwargs)


