"""The one-time token a LAN trial's URL carries: without it nothing can stream or send a goal.

One token per run, made at start and printed once (with its QR code); compared in constant time
so its bytes cannot be guessed one at a time from response timings."""
from __future__ import annotations

import hmac
import secrets
from typing import Optional

TOKEN_BYTES = 24  # 192 bits; 32 URL-safe characters


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def token_ok(expected: str, given: Optional[str]) -> bool:
    """Whether `given` is the run's token (a missing or empty one never is)."""
    if not expected or not given:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8", "replace"))
