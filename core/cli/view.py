"""``grounded view OUT [--port P] [--host 127.0.0.1]`` - a local web app to search OUT and see the hits."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

log = logging.getLogger("grounded.view")


def register(sub: argparse._SubParsersAction) -> None:
    from ..view.server import DEFAULT_PORT

    p = sub.add_parser(
        "view",
        help="serve a local web app to search an ingest output and see each hit highlighted on its pages",
        description=(
            "Serve a small web app for OUT (the output of `grounded ingest --sink lancedb`): a search box, the hits "
            "with heading paths and scores, the selected hit's pages with its line boxes drawn, its text, and a "
            "download of the annotated PDF. Everything is served from the package (no network, no CDN); nothing is "
            "written into OUT; only the indexed PDFs are read. Ctrl-C stops it."
        ),
    )
    p.add_argument("out", type=Path, metavar="OUT", help="output folder of `grounded ingest ... --sink lancedb`")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT}; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1",
                   help="address to listen on (default: 127.0.0.1; another address exposes the indexed PDFs to the network)")
    p.add_argument("--cache-mb", type=float, default=None, metavar="MB",
                   help="memory for rendered pages kept between requests (default: 64; 0 renders every request)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ..errors import UsageError
    from ..view.server import make_server

    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be in 0..65535, got {args.port}")
    cache_mb = getattr(args, "cache_mb", None)
    if cache_mb is not None and not 0 <= cache_mb <= 65536:
        raise UsageError(f"--cache-mb must be in 0..65536, got {cache_mb:g}")
    cache = None if cache_mb is None else int(cache_mb * 2**20)
    server = make_server(args.out, args.host, args.port, render_cache_bytes=cache)
    if not server.app.loopback:
        log.warning("listening on %s, not a loopback address: anyone who can reach it can search and read the indexed PDFs",
                    args.host)
    from .output import shown

    print(f"grounded view: serving {shown(args.out)} at {server.url} (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("grounded view: stopped", flush=True)  # a normal end: stdout, stderr stays for errors
    finally:
        server.server_close()
    return 0
