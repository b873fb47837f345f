"""``grounded view OUT``: a local web app over an ingest output -- search box, hits with heading
paths and scores, the selected hit's pages with its exact line boxes drawn (server-rendered PNGs),
its text, and the annotated PDF to download. Standard library HTTP server, assets shipped in the
package (``grounded/view/static``), read-only (see :mod:`grounded.view.app`)."""

from __future__ import annotations

from .app import ViewerApp
from .server import DEFAULT_PORT, ViewerServer, make_server

__all__ = ["ViewerApp", "ViewerServer", "make_server", "DEFAULT_PORT"]
