"""Shared fixtures: the real datasets folder and a throw-away lake."""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ebm_platform.process import cores

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# The tests train the PICO tagger and the verdict model's sentence scorer on a seeded sample (its own
# cache key), so a fresh machine's `make test` does not wait for the full models that `make models`
# trains for the demo; their quality is measured by `ebm eval pico` and `ebm models`, not here.
os.environ.setdefault("EBM_TRAINING_LIMIT", "40")
# pytest-xdist workers share the cores: torch's OpenMP threads (one per core by default) spin beside
# another worker's and stall both, so each worker gets its share (the suite on 2 cores, 3 workers:
# 8 min 0 s with the default, 7 min 8 s with one thread each). Subprocesses inherit it.
if (workers := int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))) > 1:
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, cores() // workers)))

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def datasets_dir() -> Path:
    """EBM_DATASETS_DIR, else ../shared/datasets beside the checkout."""
    path = Path(os.environ.get("EBM_DATASETS_DIR", REPO.parent / "shared" / "datasets"))
    if not (path / "evidence_inference" / "xml").is_dir():
        pytest.fail(f"datasets folder missing at {path}; set EBM_DATASETS_DIR")
    return path


@pytest.fixture(scope="session")
def environment_models(datasets_dir: Path) -> list[str]:
    """The environment's PICO tagger and verdict model at the tests' training limit, trained once (as
    `make models` does) before any test that builds a lake through the models job, so no test's run
    includes training."""
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.settings import training_limit
    from ebm_platform.trained_models import ensure_environment_models

    return ensure_environment_models(datasets_dir, get_encoder(), limit=training_limit())


@pytest.fixture()
def lake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh lake folder, selected through EBM_LAKE for code that reads settings."""
    from ebm_platform.settings import get_settings

    root = tmp_path / "lake"
    (root / "landing").mkdir(parents=True)
    monkeypatch.setenv("EBM_LAKE", str(root))
    get_settings.cache_clear()
    yield root
    get_settings.cache_clear()


def lake_resources(root: Path) -> dict:
    """Resources bound to a test lake (offline LLM, bundled embedder)."""
    from dagster_duckdb import DuckDBResource

    from ebm_platform.defs.io import LakeParquetIOManager
    from ebm_platform.defs.resources import EmbedderResource, GraphResource, LakeResource, LLMResource
    from ebm_platform.settings import DEFAULT_CATALOGUE

    return {
        "lake": LakeResource(root=str(root), catalogue_path=str(DEFAULT_CATALOGUE)),
        "warehouse": DuckDBResource(database=str(root / "warehouse.duckdb")),
        "io_manager": LakeParquetIOManager(root=str(root)),
        "embedder": EmbedderResource(),
        "llm": LLMResource(),
        "graph": GraphResource(lake_root=str(root)),
    }


class ScriptedServer:
    """Answers /v1/chat/completions with the next scripted behaviour: ok, 429, 429-after:SECONDS
    (Retry-After), 500, 400, 401, slow, malformed (reply text not JSON), html (a 200 whose body is not
    JSON), truncated (the body stops before its Content-Length), content:TEXT; after the script,
    `reply(prompt)` gives the content (default: a fixed valid answer)."""

    def __init__(self) -> None:
        self.script: list[str] = []
        self.reply: Callable[[str], str] | None = None
        self.prompts: list[str] = []
        self.bodies: list[dict] = []
        self.authorizations: list[str | None] = []
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's naming
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                server.bodies.append(body)
                server.prompts.append(body.get("messages", [{}])[-1].get("content", ""))
                server.authorizations.append(self.headers.get("Authorization"))
                server.requests += 1
                action = server.script.pop(0) if server.script else "ok"
                if action == "429":
                    return self._send(429, {"error": {"message": "rate limited", "type": "rate_limit"}})
                if action.startswith("429-after:"):
                    return self._send(
                        429,
                        {"error": {"message": "rate limited", "type": "rate_limit"}},
                        {"Retry-After": action.split(":", 1)[1]},
                    )
                if action == "500":
                    return self._send(500, {"error": {"message": "internal error", "type": "server_error"}})
                if action == "html":
                    return self._raw(200, b"<html><body>502 Bad Gateway</body></html>", "text/html")
                if action == "truncated":
                    return self._raw(
                        200, b'{"id": "x", "object": "chat.completion", "choi', "application/json", length=400
                    )
                if action == "401":  # like some providers, echo the key it was given
                    return self._send(
                        401,
                        {
                            "error": {
                                "message": f"Incorrect API key provided: {self.headers.get('Authorization')}",
                                "type": "invalid_request_error",
                            }
                        },
                    )
                if action == "400":
                    return self._send(400, {"error": {"message": "bad request", "type": "invalid_request"}})
                if action == "slow":
                    time.sleep(1.5)
                content = (
                    "this is {not json"
                    if action == "malformed"
                    else action[len("content:") :]
                    if action.startswith("content:")
                    else server.reply(server.prompts[-1])
                    if server.reply
                    else '```json\n{"answer": 42}\n```'
                )
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "created": 0,
                        "model": "test-model",
                        "choices": [
                            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                        ],
                        "usage": {"prompt_tokens": 11, "completion_tokens": 5, "total_tokens": 16},
                    },
                )

            def _send(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
                self._raw(status, json.dumps(body).encode(), "application/json", headers=headers)

            def _raw(
                self,
                status: int,
                data: bytes,
                content_type: str,
                length: int | None = None,
                headers: dict[str, str] | None = None,
            ) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(length or len(data)))
                    for name, value in (headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                    if length:  # promised more than was sent: hang up mid-body
                        self.close_connection = True
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
def server() -> ScriptedServer:
    s = ScriptedServer()
    yield s
    s.close()


def build_small_lake(root: Path, datasets_dir: Path) -> None:
    """Two real PFP articles plus one grade-A guideline in `root`'s landing folder, materialised
    through the real assets (documents, windows, PICO extractions, graph, window index)."""
    import dagster as dg

    from ebm_platform.conditions import load_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.defs.corpus import evidence_windows, source_documents
    from ebm_platform.defs.graph import knowledge_graph, pico_extractions
    from ebm_platform.defs.index import window_index
    from ebm_platform.settings import DEFAULT_CATALOGUE
    from ebm_platform_tests.test_readers import GUIDELINE

    import_dataset(
        "evidence-inference",
        datasets_dir,
        root / "landing",
        load_catalogue(DEFAULT_CATALOGUE),
        ids={"PMC1562433", "PMC2249589"},
    )
    (root / "landing" / "PFP" / "guideline.md").write_bytes(GUIDELINE)
    assets = [source_documents, evidence_windows, pico_extractions, knowledge_graph, window_index]
    assert dg.materialize(
        assets, partition_key="PFP", resources=lake_resources(root), instance=dg.DagsterInstance.ephemeral()
    ).success


@pytest.fixture(scope="session")
def small_lake(tmp_path_factory, datasets_dir):
    """Two real PFP articles plus one grade-A guideline, materialised through the real assets."""
    root = tmp_path_factory.mktemp("retrieval") / "lake"
    build_small_lake(root, datasets_dir)
    return root


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The reliability suite's table (`make reliability`): test, runs, failures, data lost."""
    import sys

    test_reliability = sys.modules.get("ebm_platform_tests.test_reliability")
    rows = getattr(test_reliability, "RESULTS", [])
    if not rows:
        return
    columns = ("test", "runs", "failures", *test_reliability.LOST_COLUMNS)
    write = terminalreporter.write_line
    write("")
    write(
        "| "
        + " | ".join(c if c == "test" else f"lost {c}" if c in test_reliability.LOST_COLUMNS else c for c in columns)
        + " |"
    )
    write("|" + "---|" * len(columns))
    for row in rows:
        write("| " + " | ".join(str(row[c]) for c in columns) + " |")
    write("")
    for row in rows:
        for note in row["notes"]:
            write(f"{row['test']}: {note}")
