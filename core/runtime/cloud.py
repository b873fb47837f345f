"""Shared plumbing of the cloud backends: credentials from the environment, retries with backoff.

Cloud parsers read their credentials from documented environment variables
(:func:`credential_from_env`) and wrap every remote call in :func:`call_with_retries`:
transient failures (HTTP 408/429/5xx, timeouts, dropped connections) are retried with
exponential backoff; a failure that persists, or one that retrying cannot fix (bad credentials,
invalid request), becomes a :class:`~grounded.errors.RemoteServiceError` naming the backend,
the file and the HTTP status.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from ..errors import MissingCredentialsError, RemoteServiceError, escape_controls

__all__ = [
    "RetryPolicy",
    "RETRYABLE_STATUS",
    "credential_from_env",
    "status_code_of",
    "is_transient",
    "call_with_retries",
    "Progress",
]

log = logging.getLogger(__name__)

R = TypeVar("R")

#: HTTP statuses worth retrying: request timeout, rate limit / quota, server-side failures.
RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504})

_STATUS_HINTS = {
    400: "the service rejected the request as invalid",
    401: "the service rejected the credentials",
    403: "permission denied (check the credentials, the API being enabled and the project)",
    404: "not found (check the model / processor name and location)",
    408: "the request timed out",
    413: "the document is too large for one request",
    429: "quota exhausted or rate limited",
}


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential backoff: attempt ``n`` (1-based) waits ``initial_delay * multiplier**(n-1)``
    seconds (capped at ``max_delay``, +- ``jitter`` as a fraction) before the next attempt."""

    max_attempts: int = 5
    initial_delay: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 60.0
    jitter: float = 0.1

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if self.initial_delay < 0 or self.max_delay < 0 or self.multiplier < 1 or not 0 <= self.jitter < 1:
            raise ValueError("delays must be >= 0, multiplier >= 1 and 0 <= jitter < 1")

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        base = min(self.max_delay, self.initial_delay * self.multiplier ** (attempt - 1))
        if self.jitter and base:
            base *= 1.0 + (rng or random).uniform(-self.jitter, self.jitter)
        return base


def credential_from_env(backend: str, names: Sequence[str], hint: str = "", explicit: str | None = None) -> str:
    """Return ``explicit`` or the first non-empty environment variable of ``names``.

    Raises :class:`MissingCredentialsError` naming the variable(s) when none is set.
    """
    if explicit:
        return explicit
    for name in names:
        value = os.environ.get(name, "").strip()
        if value:
            return value
    raise MissingCredentialsError(backend, " or ".join(names), hint)


def status_code_of(exc: BaseException) -> int | None:
    """HTTP status carried by an SDK exception (google-genai, google-api-core, httpx, requests)."""
    for attr in ("code", "status_code", "http_status"):
        value = getattr(exc, attr, None)
        if callable(value):  # grpc errors expose code() -> StatusCode
            continue
        if isinstance(value, int) and not isinstance(value, bool) and 100 <= value < 600:
            return value
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(status, int) and 100 <= status < 600:
        return status
    return None


def is_transient(exc: BaseException) -> bool:
    """True for failures that a later attempt may not see (rate limits, 5xx, timeouts, resets)."""
    status = status_code_of(exc)
    if status is not None:
        return status in RETRYABLE_STATUS
    if isinstance(exc, (TimeoutError, ConnectionError)):
        return True
    # httpx.TimeoutException / ConnectError, requests' Timeout / ConnectionError, google's DeadlineExceeded
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"TimeoutException", "ConnectError", "ReadError", "RemoteProtocolError", "Timeout",
                         "ConnectionError", "DeadlineExceeded", "ServiceUnavailable", "TransportError",
                         "APITimeoutError", "APIConnectionError"})  # openai / anthropic SDKs


def _describe(exc: BaseException) -> str:
    status = status_code_of(exc)
    text = " ".join(str(exc).split())[:300] or type(exc).__name__
    if status is None:
        return f"{type(exc).__name__}: {text}"
    hint = _STATUS_HINTS.get(status, "server error" if status >= 500 else "")
    return f"HTTP {status}" + (f" ({hint})" if hint else "") + f": {text}"


def call_with_retries(
    fn: Callable[[], R],
    *,
    backend: str,
    source: str,
    policy: RetryPolicy | None = None,
    sleep: Callable[[float], None] = time.sleep,
    what: str = "request",
) -> R:
    """Call ``fn`` and retry transient failures with exponential backoff.

    Errors that look like service failures (an HTTP status, a timeout, a dropped connection)
    end in :class:`RemoteServiceError` once retrying is pointless or the attempts are used up.
    Anything else (a bug, a malformed argument) propagates unchanged.
    """
    policy = policy or RetryPolicy()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except Exception as exc:
            transient = is_transient(exc)
            if not transient and status_code_of(exc) is None:
                raise
            if transient and attempt < policy.max_attempts:
                wait = policy.delay(attempt)
                log.warning("%s: %s for %s failed (%s); retry %d/%d in %.1fs", backend, what, escape_controls(str(source)),
                            _describe(exc), attempt, policy.max_attempts - 1, wait)
                sleep(wait)
                continue
            tries = f" after {attempt} attempts" if attempt > 1 else ""
            raise RemoteServiceError(f"{backend}: {what} for {source} failed{tries}: {_describe(exc)}") from exc


class Progress:
    """Reports ``done/total`` to a ``callback(done, total)`` (the CLI's bar) or to its own tqdm bar
    on stderr (shown only on a terminal)."""

    def __init__(self, callback: Callable[[int, int], None] | None, total: int, desc: str, unit: str) -> None:
        self.callback = callback
        self.total = total
        self.done = 0
        self._bar = None
        if callback is None:
            from tqdm.auto import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, disable=None)
        else:
            callback(0, total)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.callback is not None:
            self.callback(self.done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
