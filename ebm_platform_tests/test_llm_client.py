"""The LLM client over real HTTP against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ebm_platform.llm.client import LLMClient, LLMError

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


class ScriptedServer:
    """Answers /v1/chat/completions with the next scripted behaviour: ok, 429, slow, malformed, 400."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests += 1
                action = server.script.pop(0) if server.script else "ok"
                if action == "429":
                    return self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}})
                if action == "400":
                    return self._send(400, {"error": {"message": "bad request", "type": "invalid_request"}})
                if action == "slow":
                    time.sleep(1.5)
                content = ("this is {not json" if action == "malformed" else action[len("content:"):]
                           if action.startswith("content:") else '```json\n{"answer": 42}\n```')
                self._send(200, {
                    "id": "x", "object": "chat.completion", "created": 0, "model": "test-model",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
                })

            def _send(self, status: int, body: dict) -> None:
                data = json.dumps(body).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server():
    s = ScriptedServer()
    yield s
    s.close()


def _client(server: ScriptedServer, tmp_path, **kw) -> LLMClient:
    return LLMClient(model="openai/test-model", api_base=server.base, api_key="test-key",
                     timeout_s=kw.pop("timeout_s", 5.0), max_retries=kw.pop("max_retries", 3),
                     backoff_s=0.01, cache_path=tmp_path / "cache.sqlite", **kw)


def _never():
    raise AssertionError("offline path must not run when a model is configured")


def test_success_is_validated_and_cached_persistently(server, tmp_path):
    client = _client(server, tmp_path)
    result = client.complete_json("t", "what is six times seven?", SCHEMA, offline=_never)
    assert (result.data, result.mode) == ({"answer": 42}, "llm")
    assert client.usage.prompt_tokens == 11 and client.usage.completion_tokens == 5
    fresh = _client(server, tmp_path)  # a new process would see the same sqlite cache
    again = fresh.complete_json("t", "what is six times seven?", SCHEMA, offline=_never)
    assert again.mode == "cache" and server.requests == 1


def test_rate_limit_is_retried_with_backoff(server, tmp_path):
    server.script = ["429", "429"]
    client = _client(server, tmp_path)
    assert client.complete_json("t", "p", SCHEMA, offline=_never).data == {"answer": 42}
    assert client.usage.retries == 2 and server.requests == 3


def test_timeout_is_retried(server, tmp_path):
    server.script = ["slow"]
    client = _client(server, tmp_path, timeout_s=0.5)
    assert client.complete_json("t", "p", SCHEMA, offline=_never).data == {"answer": 42}
    assert client.usage.retries >= 1


def test_malformed_json_is_retried_then_fails_clearly(server, tmp_path):
    server.script = ["malformed"]
    client = _client(server, tmp_path)
    assert client.complete_json("t", "p1", SCHEMA, offline=_never).data == {"answer": 42}
    assert client.usage.invalid_outputs == 1
    server.script = ["malformed"] * 3
    with pytest.raises(LLMError, match="no valid answer after 3 attempts"):
        _client(server, tmp_path, max_retries=2).complete_json("t", "p2", SCHEMA, offline=_never)


def test_client_errors_are_not_retried(server, tmp_path):
    server.script = ["400"]
    with pytest.raises(LLMError, match="BadRequest"):
        _client(server, tmp_path).complete_json("t", "p", SCHEMA, offline=_never)
    assert server.requests == 1


def test_offline_mode_runs_deterministic_code_and_validates_it():
    client = LLMClient()
    result = client.complete_json("t", "p", SCHEMA, offline=lambda: {"answer": 7})
    assert (result.data, result.mode, client.usage.offline_calls) == ({"answer": 7}, "offline", 1)
    with pytest.raises(Exception, match="required"):
        client.complete_json("t", "p", SCHEMA, offline=lambda: {"other": 1})
