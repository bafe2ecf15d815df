"""An HTTP front that starts a model server on its first request: the embedded chat model
loads (seconds to tens of seconds, hundreds of MB) only when a reply or a job first needs it,
so a command that never calls the model (`strata web`, `memory recall`, `jobs run` with every
job skipped) never loads it.

The front listens on a free 127.0.0.1 port at once, so the settings can point at it before
anything is loaded, and forwards each request to the real server, streaming the answer back
(server-sent events included). Before the start, the model list (`GET …/models`) is answered
here: a health check is not a reason to load the model. A start that fails answers 503 with
the reason, which the model client reports like any unreachable endpoint.
"""

from __future__ import annotations

import http.client
import json
import logging
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

log = logging.getLogger(__name__)

# Returns the started server's address (`http://host:port`).
Starter = Callable[[], str]
# Headers that describe one hop's connection, never forwarded (RFC 9110 7.6.1).
HOP = frozenset({"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
                 "proxy-authorization", "proxy-authenticate", "content-length", "host"})


class ModelFront:
    """The front: `base_url` at once; the wrapped server starts on the first request."""

    def __init__(self, start: Starter, model: str) -> None:
        self._start, self._model = start, model
        self._lock = threading.Lock()
        self._target: tuple[str, int] | None = None
        self._failure: str | None = None
        front = self

        class Handler(_Forward):
            owner = front

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="model-front",
                                        daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def started(self) -> bool:
        return self._target is not None

    def model_list(self) -> bytes | None:
        """The model list answered here while nothing is started (else None: forward)."""
        if self._target is not None:
            return None
        return json.dumps({"object": "list", "data": [
            {"id": self._model, "object": "model", "owned_by": "strata"}]}).encode()

    def target(self) -> tuple[str, int]:
        """The started server's host and port, starting it once (other requests wait)."""
        with self._lock:
            if self._target is None:
                if self._failure is not None:
                    raise RuntimeError(self._failure)
                try:
                    address = urlsplit(self._start())
                except Exception as exc:  # a boundary: every later request learns why
                    self._failure = str(exc) or type(exc).__name__
                    raise RuntimeError(self._failure) from exc
                self._target = (address.hostname or "127.0.0.1", int(address.port or 80))
            return self._target

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


class _Forward(BaseHTTPRequestHandler):
    owner: ModelFront
    # HTTP/1.0: each answer ends when the connection closes, so a streamed answer needs no
    # re-framing (the client opens one connection per request to 127.0.0.1).
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        listed = self.owner.model_list() if self.path.rstrip("/").endswith("/models") else None
        if listed is not None:
            self._answer(200, listed)
            return
        try:
            host, port = self.owner.target()
        except RuntimeError as exc:
            self._answer(503, json.dumps({"error": {
                "message": f"the embedded model could not start: {exc}",
                "type": "unavailable"}}).encode())
            return
        upstream = http.client.HTTPConnection(host, port)  # no timeout: a long prompt is slow
        try:
            headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP}
            try:
                upstream.request(self.command, self.path, body=body or None, headers=headers)
                reply = upstream.getresponse()
            except OSError as exc:  # the model server went away: the client reports it
                self._answer(502, json.dumps({"error": {
                    "message": f"the embedded model did not answer: {exc}",
                    "type": "unavailable"}}).encode())
                return
            self.send_response(reply.status)
            for key, value in reply.getheaders():
                if key.lower() not in HOP:
                    self.send_header(key, value)
            self.end_headers()
            while chunk := reply.read1(65536):
                self.wfile.write(chunk)
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            log.debug("model front: the client left before the answer ended")
        finally:
            upstream.close()

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        log.debug("model front: " + format, *args)
