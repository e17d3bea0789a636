"""Serve a written site on 127.0.0.1 (convenience only: the site also opens from disk)."""

from __future__ import annotations

import functools
import http.server
from collections.abc import Callable
from pathlib import Path


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the stdlib's name
        pass


def make_server(site: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    handler = functools.partial(_QuietHandler, directory=str(site))
    return http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)


def serve_site(site: Path, *, port: int = 8765,
               announce: Callable[[str], None] = print) -> None:
    httpd = make_server(site, port)
    announce(f"serving {site} at http://127.0.0.1:{httpd.server_address[1]}/index.html "
             "(Ctrl-C to stop)")
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
