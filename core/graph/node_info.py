"""The typed record of a graph node's metadata (:class:`NodeInfo`): what the builder, the
enrichment passes and the exports write and read, by name. The values stay in
``GraphNode.metadata`` (exported as is), which keeps any other key a caller adds."""

from __future__ import annotations

from typing import Any

from ..model.element_info import MetadataView, MetaField

__all__ = ["NodeInfo"]


class NodeInfo(MetadataView):
    """Typed view over a :class:`~grounded.graph.nodes.GraphNode`'s ``metadata``."""

    __slots__ = ()
    summary = MetaField[str]("summary", "a model's summary of the node")
    summary_by = MetaField[str]("summary_by", "which pass wrote the Document's summary")
    strategy = MetaField[str]("strategy", "how the text was read: fast | ocr | llm | mixed")
    caption = MetaField[str]("caption", "a Table / Image node's caption")
    level = MetaField[int]("level", "a Header node's heading level (1 = top)")
    page = MetaField[int]("page", "a Page node's page number (1-based)")
    token_count = MetaField[int]("token_count", "a Text node's tokens")
    title = MetaField[str]("title", "the Document's title")
    topic = MetaField[str]("topic", "the Document's topic (metadata extractor)")
    keywords = MetaField[list[str]]("keywords", "the Document's keywords (metadata extractor)")
    pdf = MetaField[dict[str, Any]]("pdf", "the PDF's own document information (title, author...)")
    snapshot = MetaField[dict[str, Any]]("snapshot", "a Page node's kept image: path, sha256, dpi, size")
    sha256 = MetaField[str]("sha256", "the Document's PDF sha256")
