"""The LLM client over real HTTP against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import pytest

from ebm_platform.llm.client import LLMClient, LLMError
from ebm_platform_tests.conftest import ScriptedServer

SCHEMA = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}


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


def test_ircot_keeps_the_evidence_budget_in_betr_order(server, tmp_path):
    import json

    from ebm_platform.retrieval.answer import compose_llm

    def row(window_id: str, score: float) -> dict:
        return {"window_id": window_id, "score": score, "grade": "C", "title": "T", "text": window_id,
                "condition": "PFP", "doc_id": "d"}

    first = [row("a", 0.9), row("b", 0.5), row("c", 0.2)]
    server.script = [
        "content:" + json.dumps({"thought": "need more", "next_query": "follow-up"}),
        "content:" + json.dumps({"thought": "enough", "next_query": None}),
        "content:" + json.dumps({"core_answer": [{"statement": "Pain fell.", "citations": [1, 9]}],
                                 "evidence_by_grade": [], "pico_comparison": {},
                                 "verdict": "significantly decreased"}),
    ]
    answer = compose_llm("q?", first, _client(server, tmp_path), lambda query: [row("x", 0.7), row("y", 0.1)])
    # a follow-up window enters only by outscoring the weakest held one, and the budget (3) holds
    assert [c["window_id"] for c in answer["citations"]] == ["a", "x", "b"]
    assert answer["core_answer"][0]["citations"] == [1]  # citations beyond the evidence are dropped
    assert answer["verdict"] == "significantly decreased" and answer["verdict_basis"]["method"].startswith("stated by")


def test_the_api_key_reaches_the_provider_but_never_the_run_record(lake, server, monkeypatch):
    """EBM_LLM_API_KEY is a dg.EnvVar: read when the run starts, absent from run config, events and cache."""
    import dagster as dg

    from ebm_platform.defs.corpus import evidence_windows, source_documents
    from ebm_platform.defs.resources import default_resources
    from ebm_platform.settings import get_settings
    from ebm_platform_tests.test_readers import GUIDELINE

    secret = "sk-test-secret-4242"
    for key, value in {"EBM_LLM_MODEL": "openai/test-model", "EBM_LLM_API_BASE": server.base,
                       "EBM_LLM_API_KEY": secret, "EBM_LLM_MAX_RETRIES": "0"}.items():
        monkeypatch.setenv(key, value)
    get_settings.cache_clear()
    (lake / "landing" / "PFP").mkdir()
    (lake / "landing" / "PFP" / "g.md").write_bytes(GUIDELINE)
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize([source_documents, evidence_windows], partition_key="PFP", resources=default_resources(),
                            instance=instance)
    assert result.success and server.requests  # the LLM grouped blocks (its replies are invalid: fallback)
    assert all(auth == f"Bearer {secret}" for auth in server.authorizations)
    run = instance.get_run_by_id(result.run_id)
    assert secret not in repr(run.run_config) and secret not in repr(run.tags)
    assert not [e for e in instance.all_logs(result.run_id) if secret in repr(e)]
    assert all(secret.encode() not in p.read_bytes() for p in lake.rglob("*") if p.is_file())


def test_a_provider_error_that_echoes_the_key_is_redacted(server, tmp_path):
    server.script = ["401"]
    client = _client(server, tmp_path)
    with pytest.raises(LLMError) as caught:
        client.complete_json("t", "p", SCHEMA, offline=_never)
    assert "Incorrect API key provided" in str(caught.value) and "test-key" not in str(caught.value)
    assert caught.value.__cause__ is None  # the provider's exception (with the key) is not chained
