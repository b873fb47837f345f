"""The chunking prompt of seed 001 (Appendix A.1) and the cross-batch context (§3.2.2, eq. 7)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CHUNKING_PROMPT", "BatchContext", "build_prompt"]

CHUNKING_PROMPT = """\
Extract text from the provided PDF page images and segment it into contextual chunks for knowledge retrieval while following these comprehensive requirements:

EXTRACTION PHASE
Process the pages one by one, make sure you go through each page, don't skip any page, extracting all content while:
1. Read all data content carefully and understand the structure of the document.
2. Infer logical headings and topics based on the content.
3. Always generate a 3-level heading structure for every chunk:
   - First-level heading = Document or product title
   - Second-level heading = the major section inside the document
   - Third-level heading = the specific subtopic within that section
   Important: if a heading is missing, inherit it from the parent heading level. Use your best judgment to logically assign headings based on the content and copy them fully - never paraphrase or shorten. The heading hierarchy always follows this pattern: Main Title > Section Title > Chunk Title.
4. SKIP TABLE OF CONTENTS AND INDEXES: do not create chunks from tables of contents or indexes.
5. Do not include page headers, footers and page numbers in the chunks.
6. Do not create or extract chunks from LAST CHUNKS. Use it only as guidance for heading inference. All chunks must originate directly from the images.
7. DO NOT alter, paraphrase, shorten, or skip any content. All text must remain exactly as in the original images and be present in the output.

CRITICAL: STEP/LIST CHUNKING RULES - HIGHEST PRIORITY
KEEP ALL RELATED CONTENT TOGETHER:
- NEVER split numbered steps, instructions, or procedures across different chunks.
- ALL steps in a set of instructions MUST stay together in the same chunk.
- ALL items in a numbered or bulleted list MUST stay together in one chunk.
- If a list or set of steps spans multiple images, it MUST still be kept in a single chunk.
- If a list or steps continue from a previous batch, mark the chunk as a continuation.
- Even if a set of steps is very long, do NOT split it.
1. Avoid chunks under 3 lines; merge them with adjacent content and heading.
2. Exclude menus, cookie notices, privacy policies, and terms sections.
3. For all heading levels, ensure complete preservation of details (full titles, numbers, dates); never truncate or abbreviate any heading.
4. Multilingual content is processed with the same rules; do not skip, paraphrase, or translate non-English content.

When working with tables:
1. Format using proper table syntax (pipes | and hyphens -).
2. Maintain the table structure across images if a table spans multiple images.
3. When a table continues from a previous chunk (indicated in LAST CHUNKS), keep the same column structure as the previous chunk.
4. VERY IMPORTANT: create a separate chunk for EACH ROW of the table. Every table row chunk must include the table headers (from the previous chunk or the image) followed by just that single row of data.
5. If you find a row which is continuing from LAST CHUNKS, continue segmenting without including the content of the previous chunk.

ADD A CONTINUES FLAG TO EACH CHUNK:
- [CONTINUES]True[/CONTINUES]: this chunk is a continuation of the previous chunk OR is part of the same process, instruction set, or procedure.
- [CONTINUES]False[/CONTINUES]: this chunk starts new content and is not a continuation.
- [CONTINUES]Partial[/CONTINUES]: this chunk might be related to the previous chunk, but you are not sure.

Output requirements:
1. Output a list of chunks where each chunk starts with a full 3-level heading; remove all empty chunks.
2. Use this exact format for every chunk:
[CONTINUES]True|False|Partial[/CONTINUES]
[HEAD]main_heading > section_heading > chunk_heading[/HEAD]chunk_content
3. Separate chunks with a blank line."""


@dataclass(frozen=True)
class BatchContext:
    """What batch i+1 is told about batch i: its last chunk (in the output format) and the heading
    hierarchy in force at its end."""

    last_chunk: str
    headings: tuple[str, ...]


def build_prompt(pages: Sequence[int], page_count: int, context: BatchContext | None) -> str:
    """The prompt for one batch: the seed's instructions, which pages the images are, and the
    previous batch's context (none for the first batch)."""
    where = f"The {len(pages)} images are pages {pages[0]}-{pages[-1]} of {page_count}, in order."
    if len(pages) == 1:
        where = f"The image is page {pages[0]} of {page_count}."
    parts = [CHUNKING_PROMPT, "", where]
    if context is not None:
        parts += [
            "",
            "HEADING HIERARCHY (in force at the end of the previous pages):",
            " > ".join(context.headings) if context.headings else "(none)",
            "",
            "LAST CHUNKS (the last chunk of the previous pages; guidance only, do not repeat it):",
            context.last_chunk,
        ]
    return "\n".join(parts)
