"""A canned OpenAI-compatible server on loopback: every failure mode scripted, every request
recorded. Shared by the backend's tests and the tests of what its replies leave in a run's records."""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

MODEL = "tiny-vlm"


class CannedServer:
    """Records every request; POSTs replay `script` in order, then a good reply echoing the last text."""

    def __init__(self) -> None:
        self.script: deque[dict[str, Any]] = deque()
        self.requests: list[dict[str, Any]] = []
        self.models: Any = {"object": "list", "data": [{"id": MODEL, "object": "model"}]}
        self.models_status = 200
        self.default_delay = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _reply(self, status: int, body: Any, headers: Optional[dict[str, str]] = None) -> None:
                raw = body if isinstance(body, bytes) else body.encode() if isinstance(body, str) \
                    else json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(raw)))
                    for k, v in (headers or {}).items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass

            def do_GET(self) -> None:
                with server.lock:
                    server.requests.append({"method": "GET", "path": self.path, "headers": dict(self.headers),
                                            "t": time.monotonic()})
                self._reply(server.models_status, server.models)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with server.lock:
                    server.requests.append({"method": "POST", "path": self.path, "headers": dict(self.headers),
                                            "body": body, "t": time.monotonic()})
                    step = server.script.popleft() if server.script else {}
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    time.sleep(step.get("delay", server.default_delay))
                    if "body" in step:
                        self._reply(step.get("status", 200), step["body"], step.get("headers"))
                    else:
                        self._reply(step.get("status", 200), good_reply(body), step.get("headers"))
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def posts(self) -> list[dict[str, Any]]:
        return [r for r in self.requests if r["method"] == "POST"]

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def good_reply(body: dict[str, Any]) -> dict[str, Any]:
    content = body["messages"][-1]["content"]
    texts = [content] if isinstance(content, str) else [p["text"] for p in content if p["type"] == "text"]
    return {"id": "x", "object": "chat.completion", "model": body["model"],
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": f"echo: {texts[-1]}"}}],
            "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14}}
