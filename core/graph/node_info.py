"""The typed record of a graph node's metadata (:class:`NodeInfo`): what the builder, the
enrichment passes and the exports write and read, by name. The values stay in
``GraphNode.metadata`` (exported as is), which keeps any other key a caller adds."""

from __future__ import annotations

from typing import Any

from ..model.element_info import MetadataView, metadata_field

__all__ = ["NodeInfo"]


class NodeInfo(MetadataView):
    """Typed view over a :class:`~grounded.graph.nodes.GraphNode`'s ``metadata``."""

    __slots__ = ()
    summary: str | None = metadata_field("summary", "a model's summary of the node")  # type: ignore[assignment]
    summary_by: str | None = metadata_field("summary_by", "which pass wrote the Document's summary")  # type: ignore[assignment]
    strategy: str | None = metadata_field("strategy", "how the text was read: fast | ocr | llm | mixed")  # type: ignore[assignment]
    caption: str | None = metadata_field("caption", "a Table / Image node's caption")  # type: ignore[assignment]
    level: int | None = metadata_field("level", "a Header node's heading level (1 = top)")  # type: ignore[assignment]
    page: int | None = metadata_field("page", "a Page node's page number (1-based)")  # type: ignore[assignment]
    token_count: int | None = metadata_field("token_count", "a Text node's tokens")  # type: ignore[assignment]
    title: str | None = metadata_field("title", "the Document's title")  # type: ignore[assignment]
    topic: str | None = metadata_field("topic", "the Document's topic (metadata extractor)")  # type: ignore[assignment]
    keywords: list[str] | None = metadata_field("keywords", "the Document's keywords (metadata extractor)")  # type: ignore[assignment]
    pdf: dict[str, Any] | None = metadata_field("pdf", "the PDF's own document information (title, author...)")  # type: ignore[assignment]
    snapshot: dict[str, Any] | None = metadata_field("snapshot", "a Page node's kept image: path, sha256, dpi, size")  # type: ignore[assignment]
    sha256: str | None = metadata_field("sha256", "the Document's PDF sha256")  # type: ignore[assignment]
