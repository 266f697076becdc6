"""One LLM client for every task: litellm for any provider, or `offline` deterministic code.

- persistent response cache (sqlite) keyed by model + task + temperature + prompt hash;
- retries with exponential backoff (or the provider's Retry-After, capped) on rate limits,
  timeouts, connection and 5xx errors, bodies that are not JSON, and on replies that are not
  valid JSON for the task's schema; only a valid reply is cached;
- token and cost totals for asset metadata;
- model ``offline`` routes each task to the deterministic function the caller supplies and
  marks the result ``mode='offline'``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jsonschema

from ebm_platform.llm.prompts import DATA_RULE

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
log = logging.getLogger(__name__)
OFFLINE = "offline"


def _validator(schema: dict) -> jsonschema.protocols.Validator:
    """A checked, compiled validator per schema (building one per answer dominated offline runs)."""
    key = json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]


_VALIDATORS: dict[str, jsonschema.protocols.Validator] = {}


class LLMError(RuntimeError):
    """The model could not produce a valid answer within the retry budget."""


@dataclass
class LLMResult:
    """A validated JSON answer and where it came from."""

    data: Any
    mode: str  # "offline", "llm" or "cache"
    model: str


@dataclass
class Usage:
    calls: int = 0
    cache_hits: int = 0
    offline_calls: int = 0
    retries: int = 0
    invalid_outputs: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def as_metadata(self) -> dict[str, float | int]:
        return dict(self.__dict__)


class ResponseCache:
    """A sqlite key-value store of raw model replies."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._lock = threading.Lock()
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            with self._connect() as db:
                db.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, model TEXT, reply TEXT)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(str(self.path), timeout=30)

    def get(self, key: str) -> str | None:
        if self.path is None:
            return None
        with self._lock, self._connect() as db:
            row = db.execute("SELECT reply FROM responses WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def put(self, key: str, model: str, reply: str) -> None:
        if self.path is None:
            return
        with self._lock, self._connect() as db:
            db.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?)", (key, model, reply))


def parse_json_reply(text: str) -> Any:
    """The JSON object in a reply, tolerating a ```json fence; ValueError when there is none."""
    fenced = re.search(r"```(?:json)?\s*(.*?)```", text, re.S)
    candidate = fenced.group(1) if fenced else text
    start = min((i for i in (candidate.find("{"), candidate.find("[")) if i >= 0), default=-1)
    if start < 0:
        raise ValueError("reply holds no JSON value")
    return json.loads(candidate[start:].strip().rstrip("`").strip())


@dataclass
class LLMClient:
    """Chat completions returning schema-validated JSON."""

    model: str = OFFLINE
    api_base: str | None = None
    api_key: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    backoff_s: float = 0.5
    max_wait_s: float = 60.0  # longest pause between attempts, whatever Retry-After asks
    cache_path: Path | None = None
    usage: Usage = field(default_factory=Usage)

    def __post_init__(self) -> None:
        self.cache = ResponseCache(self.cache_path if self.model != OFFLINE else None)

    @property
    def offline(self) -> bool:
        return self.model == OFFLINE

    def cache_key(self, task: str, prompt: str, temperature: float) -> str:
        return hashlib.sha256(f"{self.model}\x00{task}\x00{temperature}\x00{prompt}".encode()).hexdigest()

    def complete_json(
        self,
        task: str,
        prompt: str,
        schema: dict,
        offline: Callable[[], Any],
        temperature: float = 0.0,
    ) -> LLMResult:
        """Answer `prompt` with JSON matching `schema`; offline mode calls `offline()` instead."""
        if self.offline:
            data = offline()
            _validator(schema).validate(data)
            self.usage.offline_calls += 1
            return LLMResult(data, OFFLINE, OFFLINE)
        key = self.cache_key(task, prompt, temperature)
        cached = self.cache.get(key)
        if cached is not None:
            try:
                data = parse_json_reply(cached)
                _validator(schema).validate(data)
                self.usage.cache_hits += 1
                return LLMResult(data, "cache", self.model)
            except (ValueError, jsonschema.ValidationError):
                log.warning("discarding invalid cached reply for task %s", task)
        last_error: Exception | None = None
        asked_wait = 0.0  # the provider's Retry-After on the last attempt
        for attempt in range(self.max_retries + 1):
            if attempt:
                self.usage.retries += 1
                time.sleep(min(max(self.backoff_s * 2 ** (attempt - 1), asked_wait), self.max_wait_s))
            try:
                reply = self._call(prompt, temperature)
            except Exception as exc:  # litellm maps provider errors to its own classes
                if not _retryable(exc):
                    raise LLMError(self._redact(f"{task}: {type(exc).__name__}: {exc}")) from None
                last_error, asked_wait = exc, _retry_after(exc)
                continue
            try:
                data = parse_json_reply(reply)
                _validator(schema).validate(data)
            except (ValueError, jsonschema.ValidationError) as exc:
                self.usage.invalid_outputs += 1
                last_error = exc
                continue
            self.cache.put(key, self.model, reply)
            return LLMResult(data, "llm", self.model)
        raise LLMError(self._redact(f"{task}: no valid answer after {self.max_retries + 1} attempts: {last_error}"))

    def _redact(self, text: str) -> str:
        """Provider errors may echo the key (e.g. 'Incorrect API key provided: sk-...'): never pass it on."""
        return text.replace(self.api_key, "***") if self.api_key else text

    def _call(self, prompt: str, temperature: float) -> str:
        import litellm

        response = litellm.completion(
            model=self.model,
            messages=[{"role": "system", "content": DATA_RULE}, {"role": "user", "content": prompt}],
            temperature=temperature,
            timeout=self.timeout_s,
            api_base=self.api_base,
            api_key=self.api_key,
            num_retries=0,
            max_retries=0,
        )
        self.usage.calls += 1
        usage = getattr(response, "usage", None)
        if usage is not None:
            self.usage.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
            self.usage.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        try:
            self.usage.cost_usd += float(litellm.completion_cost(completion_response=response) or 0.0)
        except Exception:  # unknown models have no price in the local cost map
            pass
        return response.choices[0].message.content or ""


def _retry_after(exc: Exception) -> float:
    """Seconds the provider asked to wait (Retry-After, in seconds), else 0."""
    headers = getattr(exc, "litellm_response_headers", None) or getattr(exc, "headers", None) or {}
    try:
        return max(0.0, float(headers.get("retry-after", 0)))
    except (TypeError, ValueError):  # an HTTP date instead of seconds: fall back to the backoff
        return 0.0


def _retryable(exc: Exception) -> bool:
    import litellm

    retryable = (
        litellm.RateLimitError,
        litellm.Timeout,
        litellm.APIConnectionError,
        litellm.InternalServerError,
        litellm.ServiceUnavailableError,
    )
    return isinstance(exc, retryable)


def client_from_settings() -> LLMClient:
    """The client configured by EBM_LLM_* variables."""
    from ebm_platform.settings import get_settings

    s = get_settings()
    return LLMClient(
        model=s.llm_model,
        api_base=s.llm_api_base,
        api_key=s.llm_api_key,
        timeout_s=s.llm_timeout_s,
        max_retries=s.llm_max_retries,
        cache_path=s.llm_cache_path,
    )
