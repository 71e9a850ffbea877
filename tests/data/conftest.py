"""Fixtures for the data-layer tests: a real HTTP server and the offline data mirror."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class _Route:
    body: bytes
    faults: list[str]  # one per request, consumed in order; then the body is served


@dataclass
class FileServer:
    """Serves byte strings on 127.0.0.1 and records every request path.

    A route can be given faults for its first requests:
      "503"       answer 503 Service Unavailable
      "truncate"  announce a Content-Length larger than the body, send the body, close
    """

    base_url: str
    routes: dict[str, _Route] = field(default_factory=dict)
    requests: list[str] = field(default_factory=list)

    def serve(self, path: str, body: bytes, *faults: str) -> str:
        self.routes[path] = _Route(body, list(faults))
        return self.base_url + path


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer  # with a .files attribute, set below

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        files: FileServer = self.server.files  # type: ignore[attr-defined]
        files.requests.append(self.path)
        route = files.routes.get(self.path)
        if route is None:
            self.send_error(404)
            return
        fault = route.faults.pop(0) if route.faults else None
        if fault == "503":
            self.send_error(503)
            return
        self.send_response(200)
        extra = 1000 if fault == "truncate" else 0
        self.send_header("Content-Length", str(len(route.body) + extra))
        self.end_headers()
        self.wfile.write(route.body)
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass


@pytest.fixture
def file_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FileServer]:
    # A proxy configured on the test machine must not intercept requests to ourselves.
    for var in ("no_proxy", "NO_PROXY"):
        monkeypatch.setenv(var, "127.0.0.1,localhost")
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    files = FileServer(base_url=f"http://127.0.0.1:{httpd.server_address[1]}")
    httpd.files = files  # type: ignore[attr-defined]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield files
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


@pytest.fixture(scope="session")
def real_mirror() -> Path:
    """The offline mirror: $FEDREPRO_DATA_MIRROR, else <repo>/../shared/datasets."""
    path = Path(os.environ.get("FEDREPRO_DATA_MIRROR") or REPO_ROOT.parent / "shared" / "datasets")
    if not (path / "MANIFEST.json").is_file():
        pytest.skip(f"offline data mirror not found at {path} (set FEDREPRO_DATA_MIRROR to its location)")
    return path
