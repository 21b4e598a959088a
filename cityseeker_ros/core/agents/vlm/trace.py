"""A trace of the requests a run sent its VLM, to replay them later: the same stop and choice calls,
retries and revisits, in order, against another backend or other settings (decision_latency.py
times the local backend's switches on one).

Record one with the `recording` backend, which passes every request to the backend it wraps:

    cityseeker benchmark ... --policy vlm --backend recording --backend-param inner=transformers \\
        --backend-param model=/models/Qwen2.5-VL-7B-Instruct --backend-param trace_out=runs/trace

The folder holds `requests.jsonl` (one request a line, written whole and flushed, so a crash leaves
every line before it readable) and `images/<hash>.npy`, each distinct image once (a revisited view
is stored once and named again).
"""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cityseeker_ros.core.agents.vlm.backend import (
    BACKENDS,
    Backend,
    Generation,
    GenerationRequest,
    Message,
    make_backend,
)
from cityseeker_ros.core.infra.errors import ConfigError

REQUESTS = "requests.jsonl"


def _image_name(image: np.ndarray) -> str:
    array = np.ascontiguousarray(image)
    digest = hashlib.sha256(f"{array.dtype.str}{array.shape}".encode() + array.tobytes()).hexdigest()[:24]
    return f"{digest}.npy"


class TraceWriter:
    def __init__(self, folder: Path | str) -> None:
        self.folder = Path(folder)
        if (self.folder / REQUESTS).exists():
            raise ConfigError(f"trace_out: {self.folder / REQUESTS} exists; give an empty or new folder")
        (self.folder / "images").mkdir(parents=True, exist_ok=True)
        self._lines = (self.folder / REQUESTS).open("a", encoding="utf-8")
        self.count = 0

    def add(self, request: GenerationRequest) -> None:
        messages = []
        for message in request.messages:
            content: list[dict[str, str]] = []
            for item in message.content:
                content.append({"text": item} if isinstance(item, str) else {"image": self._image(item)})
            messages.append({"role": message.role, "content": content})
        line = json.dumps({"messages": messages, "max_new_tokens": request.max_new_tokens,
                           "temperature": request.temperature, "json_schema": request.json_schema})
        self._lines.write(line + "\n")
        self._lines.flush()
        self.count += 1

    def _image(self, image: np.ndarray) -> str:
        name = _image_name(image)
        path = self.folder / "images" / name
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.part")
            with partial.open("wb") as f:
                np.save(f, np.ascontiguousarray(image), allow_pickle=False)
            partial.replace(path)  # whole or absent
        return name

    def close(self) -> None:
        self._lines.close()


def load_trace(folder: Path | str) -> list[GenerationRequest]:
    """The requests of a trace folder, in order; a bad line or a missing image is named."""
    folder = Path(folder)
    file = folder / REQUESTS
    if not file.is_file():
        raise ConfigError(f"trace: {file} does not exist (record one with the recording backend)")
    requests, images = [], {}
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        try:
            raw = json.loads(line)
            messages = []
            for message in raw["messages"]:
                content: list[Any] = []
                for item in message["content"]:
                    if "text" in item:
                        content.append(str(item["text"]))
                        continue
                    name = str(item["image"])
                    if name not in images:
                        images[name] = np.load(folder / "images" / Path(name).name, allow_pickle=False)
                    content.append(images[name])
                messages.append(Message(str(message["role"]), tuple(content)))
            requests.append(GenerationRequest(tuple(messages), max_new_tokens=int(raw["max_new_tokens"]),
                                              temperature=float(raw["temperature"]),
                                              json_schema=raw.get("json_schema")))
        except (ValueError, KeyError, TypeError, OSError) as exc:
            raise ConfigError(f"trace: {file} line {number}: {type(exc).__name__}: {exc}") from None
    return requests


@BACKENDS.register("recording")
class RecordingBackend(Backend):
    """Another backend (`inner`, made with the remaining parameters) whose requests are written to
    the trace folder `trace_out` as they are sent."""

    name = "recording"

    def __init__(self, inner: str = "", trace_out: str = "", **inner_params: Any) -> None:
        if not inner or inner == self.name:
            raise ConfigError(f"recording backend: name the backend to record with inner=...; known: "
                              f"{', '.join(n for n in BACKENDS.names() if n != self.name)}")
        if not trace_out:
            raise ConfigError("recording backend: give the trace folder with trace_out=...")
        self.inner = make_backend(inner, **inner_params)
        self.trace = TraceWriter(trace_out)

    def generate(self, requests: Sequence[GenerationRequest]) -> list[Generation]:
        for request in requests:
            self.trace.add(request)
        return self.inner.generate(requests)

    def describe(self) -> dict[str, Any]:
        return {**self.inner.describe(), "recorded_to": str(self.trace.folder)}

    def close(self) -> None:
        self.trace.close()
        self.inner.close()
