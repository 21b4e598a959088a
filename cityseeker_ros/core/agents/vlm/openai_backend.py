"""A VLM behind any OpenAI-compatible chat-completions server (vLLM, `transformers serve`, SGLang,
llama.cpp, hosted APIs).

The benchmark must survive a flaky server without hiding a misconfigured one, so failures are
split: transient ones (connection refused, timeouts, 429, 5xx) are retried with seeded,
jittered exponential backoff; the ones a user must fix (wrong URL, unknown model, rejected key)
are reported once with the URL and the cause, never the key: every message, log line and
describe() shows the URL with its user and password masked (core/infra/redact.py), and extra_body
and headers with their secret-named entries masked.

Replies are cleaned at this boundary (core/infra/text.py): malformed UTF-8 and escaped lone
surrogates in a server's JSON become U+FFFD, so no writer downstream can fail on them.

Start-up check: unless ``check_on_start=False`` the constructor calls :meth:`OpenAIBackend.check`
(GET ``{base_url}/models``), so a run fails before its first episode when the server is down or
does not list the model. Servers that list something other than what they serve
(``transformers serve <local folder>`` lists the Hugging Face cache instead) need
``check_on_start=False``; an empty or unavailable list is accepted with a warning.
"""
from __future__ import annotations

import base64
import email.utils
import io
import json
import logging
import os
import random
import re
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, Optional

import numpy as np

from cityseeker_ros.core.agents.vlm.backend import (
    BACKENDS,
    Backend,
    BackendError,
    Generation,
    GenerationRequest,
    Latency,
    Message,
)
from cityseeker_ros.core.infra.errors import ConfigError
from cityseeker_ros.core.infra.redact import redact, redact_text
from cityseeker_ros.core.infra.text import loads_json

log = logging.getLogger("cityseeker_ros.vlm.openai")

JSON_MODES = ("auto", "schema", "object", "off")
IMAGE_FORMATS = ("jpeg", "png")
_MAX_RETRY_AFTER_S = 120.0  # a Retry-After beyond this is a misconfigured server, not a busy one
_DETAIL_CHARS = 300  # enough of a server's error body to act on, short enough for one log line


class _Retryable(Exception):
    """A transient failure worth another attempt; `wait_s` is the server's Retry-After, if any."""

    def __init__(self, cause: str, wait_s: Optional[float] = None, status: Optional[int] = None) -> None:
        super().__init__(cause)
        self.cause = cause
        self.wait_s = wait_s
        self.status = status


class _Unavailable(BackendError):
    """Retries ran out; `status` is the last HTTP status, None when no reply came at all."""

    def __init__(self, message: str, status: Optional[int]) -> None:
        super().__init__(message)
        self.status = status


class _ResponseFormatRejected(Exception):
    """The server refused `response_format`; the caller decides whether to drop it."""


@BACKENDS.register("openai")
class OpenAIBackend(Backend):
    """Chat completions over HTTP, images as base64 data URIs, one request per generation."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: Optional[str] = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        retries: int = 3,
        max_concurrency: int = 4,
        json_mode: str = "auto",
        image_format: str = "jpeg",
        jpeg_quality: int = 90,
        max_image_side: Optional[int] = None,
        extra_body: Optional[dict[str, Any]] = None,
        headers: Optional[dict[str, str]] = None,
        check_on_start: bool = True,
        backoff_s: float = 0.5,
        backoff_max_s: float = 30.0,
        seed: int = 0,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            shown = redact_text(base_url) if isinstance(base_url, str) else base_url
            raise ConfigError(f"openai backend: base_url must start with http:// or https://, got {shown!r}")
        if not model:
            raise ConfigError("openai backend: model must name the served model")
        if json_mode not in JSON_MODES:
            raise ConfigError(f"openai backend: json_mode must be one of {JSON_MODES}, got {json_mode!r}")
        if image_format not in IMAGE_FORMATS:
            raise ConfigError(f"openai backend: image_format must be one of {IMAGE_FORMATS}, got {image_format!r}")
        if not 1 <= int(jpeg_quality) <= 100:
            raise ConfigError(f"openai backend: jpeg_quality must be in 1..100, got {jpeg_quality}")
        if max_image_side is not None and max_image_side < 1:
            raise ConfigError(f"openai backend: max_image_side must be positive, got {max_image_side}")
        if max_concurrency < 1 or retries < 0 or timeout_s <= 0 or backoff_s < 0 or backoff_max_s < 0:
            raise ConfigError("openai backend: max_concurrency >= 1, retries >= 0, timeout_s > 0 and backoff >= 0")
        if extra_body is not None and not isinstance(extra_body, dict):
            raise ConfigError("openai backend: extra_body must be a mapping")
        if headers is not None and (not isinstance(headers, dict)
                                    or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())):
            raise ConfigError("openai backend: headers must be a mapping of header names to strings")

        import httpx  # lazily: importing the backend module must stay cheap

        self._httpx = httpx
        self.base_url = base_url.rstrip("/")
        self._shown_base_url = redact_text(self.base_url)  # what messages and describe() show
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.max_concurrency = int(max_concurrency)
        self.json_mode = json_mode
        self.image_format = image_format
        self.jpeg_quality = int(jpeg_quality)
        self.max_image_side = max_image_side
        self.extra_body = dict(extra_body or {})
        self.backoff_s = float(backoff_s)
        self.backoff_max_s = float(backoff_max_s)

        self._extra_headers = redact(dict(headers or {}))  # masked: only describe() reads it
        sent = {"Content-Type": "application/json", **(headers or {})}
        # The key lives only in the client's headers: never in an attribute, a message or describe().
        key = os.environ.get(api_key_env, "") if api_key_env else ""
        self._has_key = bool(key)
        if key:
            sent["Authorization"] = f"Bearer {key}"
        self._client = httpx.Client(
            headers=sent,
            timeout=httpx.Timeout(self.timeout_s),
            limits=httpx.Limits(max_connections=self.max_concurrency,
                                max_keepalive_connections=self.max_concurrency),
        )
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._response_format_ok = json_mode != "off"  # "auto" turns this off for the session on rejection
        self._pool: Optional[ThreadPoolExecutor] = None
        if check_on_start:
            try:
                self.check()
            except BaseException:
                self.close()
                raise

    # ----- public -----

    def check(self) -> list[str]:
        """Fail before the first episode if the server is down or does not serve `model`.

        Returns the model ids the server lists (possibly empty when it cannot list them)."""
        url = f"{self._shown_base_url}/models"
        try:
            response, _ = self._send("GET", "models", None)
        except ConfigError as exc:
            raise ConfigError(f"{exc}; does base_url end in /v1?") from None
        except _Unavailable as exc:
            if exc.status is None or exc.status < 500:
                raise
            log.warning("%s cannot list its models (%s); not checking that it serves '%s'", url, exc, self.model)
            return []
        data = response.get("data") if isinstance(response, dict) else None
        ids = [str(m.get("id")) for m in data if isinstance(m, dict)] if isinstance(data, list) else []
        if not ids:
            log.warning("%s lists no models; not checking that it serves '%s'", url, self.model)
        elif self.model not in ids:
            raise ConfigError(f"model '{self.model}' is not served at {self._shown_base_url}; "
                              f"it lists: {', '.join(ids)}")
        return ids

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        """One HTTP request per generation, at most `max_concurrency` in flight, results in order."""
        if not requests:
            return []
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="openai-backend")
            pool = self._pool
        futures: list[Future[Generation]] = [pool.submit(self._generate_one, r) for r in requests]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise

    def describe(self) -> dict[str, Any]:
        desc: dict[str, Any] = {
            "name": self.name,
            "base_url": self._shown_base_url,
            "model": self.model,
            "json_mode": self.json_mode,
            "json_mode_resolved": self._resolved_json_mode(),
            "image_format": self.image_format,
            "max_image_side": self.max_image_side,
            "max_concurrency": self.max_concurrency,
            "timeout_s": self.timeout_s,
            "retries": self.retries,
            "authenticated": self._has_key,
        }
        if self.image_format == "jpeg":
            desc["jpeg_quality"] = self.jpeg_quality
        if self.extra_body:
            desc["extra_body"] = redact(self.extra_body)
        if self._extra_headers:
            desc["headers"] = dict(self._extra_headers)
        return desc

    def close(self) -> None:
        with self._lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()

    # ----- request building -----

    def _resolved_json_mode(self) -> str:
        if not self._response_format_ok:
            return "off"
        return "schema" if self.json_mode == "auto" else self.json_mode

    def _response_format(self, request: GenerationRequest) -> Optional[dict[str, Any]]:
        """JSON only when the request asks for it and the server has not refused it this session."""
        if request.json_schema is None or not self._response_format_ok:
            return None
        if self._resolved_json_mode() == "object":
            return {"type": "json_object"}
        name = "".join(c if c.isalnum() or c in "_-" else "_" for c in str(request.json_schema.get("title", "")))
        return {"type": "json_schema", "json_schema": {"name": name[:64] or "response", "schema": request.json_schema}}

    def _encode_image(self, image: np.ndarray) -> str:
        """A data URI; Pillow reads the array as RGB, so channels go out in the order they came in."""
        from PIL import Image

        if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
            shape = getattr(image, "shape", None)
            dtype = getattr(image, "dtype", type(image).__name__)
            raise ValueError(f"images must be RGB uint8 arrays of shape (H, W, 3), got {shape} {dtype}")
        pil = Image.fromarray(np.ascontiguousarray(image), mode="RGB")
        if self.max_image_side is not None and max(pil.size) > self.max_image_side:
            scale = self.max_image_side / max(pil.size)
            size = (max(1, round(pil.width * scale)), max(1, round(pil.height * scale)))
            pil = pil.resize(size, Image.Resampling.BICUBIC)
        buf = io.BytesIO()
        if self.image_format == "jpeg":
            pil.save(buf, format="JPEG", quality=self.jpeg_quality)
        else:
            pil.save(buf, format="PNG")
        return f"data:image/{self.image_format};base64,{base64.b64encode(buf.getvalue()).decode('ascii')}"

    def _message(self, message: Message) -> dict[str, Any]:
        # A lone text goes as a plain string: some servers' templates accept nothing else for "system".
        if len(message.content) == 1 and isinstance(message.content[0], str):
            return {"role": message.role, "content": message.content[0]}
        parts: list[dict[str, Any]] = []
        for item in message.content:
            if isinstance(item, str):
                parts.append({"type": "text", "text": item})
            else:
                parts.append({"type": "image_url", "image_url": {"url": self._encode_image(item)}})
        return {"role": message.role, "content": parts}

    def _body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [self._message(m) for m in request.messages],
            "temperature": float(request.temperature),
            "max_tokens": int(request.max_new_tokens),
            "max_completion_tokens": int(request.max_new_tokens),
        }
        body.update(self.extra_body)
        return body

    # ----- sending -----

    def _generate_one(self, request: GenerationRequest) -> Generation:
        t0 = time.perf_counter()
        body = self._body(request)
        preprocess_s = time.perf_counter() - t0
        url = f"{self._shown_base_url}/chat/completions"
        while True:
            response_format = self._response_format(request)
            if response_format is not None:
                body["response_format"] = response_format
            else:
                body.pop("response_format", None)
            try:
                reply, generate_s = self._send("POST", "chat/completions", body,
                                               response_format_sent=response_format is not None)
                break
            except _ResponseFormatRejected as exc:
                if self.json_mode != "auto":
                    raise ConfigError(f"{url} rejects response_format for json_mode '{self.json_mode}' ({exc}); "
                                      "use json_mode 'auto' or 'off'") from None
                with self._lock:
                    if self._response_format_ok:
                        log.warning("%s rejects response_format (%s); sending none for the rest of the session",
                                    url, exc)
                    self._response_format_ok = False
        text, prompt_tokens, completion_tokens = self._parse_completion(url, reply)
        return Generation(
            text=text,
            latency=Latency(preprocess_s=preprocess_s, generate_s=generate_s),
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    @staticmethod
    def _parse_completion(url: str, reply: Any) -> tuple[str, Optional[int], Optional[int]]:
        try:
            message = reply["choices"][0]["message"]
            text = message.get("content") or ""
            if not isinstance(text, str):
                raise TypeError(f"content is {type(text).__name__}")
        except (KeyError, IndexError, TypeError, AttributeError) as exc:
            raise BackendError(f"malformed chat completion from {url}: {exc!r}: "
                               f"{redact_text(json.dumps(reply)[:_DETAIL_CHARS])}") from None
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        prompt = usage.get("prompt_tokens")
        completion = usage.get("completion_tokens")
        return (text, int(prompt) if isinstance(prompt, (int, float)) else None,
                int(completion) if isinstance(completion, (int, float)) else None)

    def _send(self, method: str, path: str, body: Optional[dict[str, Any]],
              response_format_sent: bool = False) -> tuple[Any, float]:
        """The decoded JSON reply to `path` under base_url and the round trip of the attempt that
        answered (backoff excluded)."""
        url = f"{self._shown_base_url}/{path}"
        attempts = self.retries + 1
        for attempt in range(attempts):
            try:
                return self._attempt(method, path, body, response_format_sent)
            except _Retryable as exc:
                if attempt == attempts - 1:
                    raise _Unavailable(f"{exc.cause} ({method} {url}, {attempts} attempt(s))", exc.status) from None
                delay = self._backoff(attempt, exc.wait_s)
                log.warning("%s: %s; retry %d/%d in %.2f s", url, exc.cause, attempt + 1, self.retries, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns or raises

    def _backoff(self, attempt: int, retry_after: Optional[float]) -> float:
        with self._lock:
            jitter = 0.5 + 0.5 * self._rng.random()
        delay = min(self.backoff_max_s, self.backoff_s * 2 ** attempt) * jitter
        if retry_after is not None:  # the server knows when it will have room: never come back sooner
            delay = max(delay, min(retry_after, _MAX_RETRY_AFTER_S))
        return delay

    def _attempt(self, method: str, path: str, body: Optional[dict[str, Any]],
                 response_format_sent: bool) -> tuple[Any, float]:
        httpx = self._httpx
        url = f"{self._shown_base_url}/{path}"
        t0 = time.perf_counter()
        try:
            response = self._client.request(method, f"{self.base_url}/{path}", json=body)
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timed out after {self.timeout_s:g} s ({type(exc).__name__})") from None
        except httpx.TransportError as exc:  # the cause first: "cannot reach the server at URL: connection refused"
            raise _Retryable(f"cannot reach the server at {self._shown_base_url}: {_transport_reason(exc)}") from None
        elapsed = time.perf_counter() - t0
        status = response.status_code
        # A server may echo the request (and so a key) in its error body.
        detail = redact_text(response.text[:_DETAIL_CHARS].strip())
        if status == 429 or status >= 500:
            raise _Retryable(f"HTTP {status}: {detail}", _retry_after(response.headers.get("Retry-After")), status)
        if status in (401, 403):
            if self._has_key:
                raise BackendError(f"{url}: HTTP {status}: the API key in ${self.api_key_env} was rejected")
            where = f"set ${self.api_key_env}" if self.api_key_env else "set api_key_env to the variable holding it"
            raise BackendError(f"{url}: HTTP {status}: the server wants an API key; {where}")
        if status == 404:
            raise ConfigError(f"{url}: HTTP 404, model '{self.model}' or the endpoint is not found: {detail}")
        if status in (400, 422) and response_format_sent and ("response_format" in detail or "json_schema" in detail):
            raise _ResponseFormatRejected(f"HTTP {status}: {detail}")
        if status >= 400:
            raise BackendError(f"{url}: HTTP {status}: {detail}")
        try:
            return loads_json(response.content), elapsed
        except ValueError as exc:
            raise BackendError(f"{url}: HTTP {status} with a body that is not JSON ({exc}): {detail}") from None


def _transport_reason(exc: Exception) -> str:
    """Why a connection failed, in words: "connection refused" for httpx's "[Errno 111] Connection
    refused", else the exception's own text (redacted) or its type."""
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", redact_text(str(exc)).strip())
    return (text[:1].lower() + text[1:]) if text else type(exc).__name__


def _retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a Retry-After header: a number, or an HTTP date."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())
