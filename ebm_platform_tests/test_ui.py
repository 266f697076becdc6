"""The Dagster UI in a real headless browser (Debian's chromium driven by playwright's Python API):
`dagster dev` over a small real lake, then the asset graph, a partitioned asset's 23 partitions,
a failed blocking check and the evaluation table. Screenshots go to data_lake/reports/ui/.
`make ui-check` installs chromium and playwright and runs only this file; without them the test
is skipped and pytest's summary (-rs) says why."""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest

from ebm_platform_tests.conftest import REPO, lake_resources

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or importlib.util.find_spec("playwright") is None,
    reason="UI check skipped: needs Debian's chromium and playwright (`make ui-check` installs both)",
)
SCREENSHOTS = REPO / "data_lake" / "reports" / "ui"


def _build(root: Path, home: Path, datasets_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """PFP from two real articles and a guideline (benchmark passes, evaluation runs); ACL's
    benchmark fails its blocking check (a duplicated id and a gold window that does not exist)."""
    from ebm_platform.benchmark import sources
    from ebm_platform.conditions import load_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.defs.benchmark import (
        BenchmarkResource,
        benchmark_qa,
        benchmark_quality_signals,
        benchmark_splits,
        benchmark_structure,
    )
    from ebm_platform.defs.corpus import evidence_windows, source_documents
    from ebm_platform.defs.evaluation import evaluation_report, evaluation_summary
    from ebm_platform.defs.graph import knowledge_graph, pico_extractions
    from ebm_platform.defs.index import window_index
    from ebm_platform.defs.resources import EvaluationResource
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
    for folder in (root / "landing").iterdir():  # the articles are also tagged MACL: keep what is built here
        if folder.name != "PFP":
            shutil.rmtree(folder)
    corpus = [source_documents, evidence_windows, pico_extractions, knowledge_graph, window_index]
    assets = [
        *corpus,
        benchmark_qa,
        benchmark_structure,
        benchmark_quality_signals,
        benchmark_splits,
        evaluation_report,
        evaluation_summary,
    ]
    resources = lake_resources(root) | {
        "benchmark": BenchmarkResource(
            datasets_dir=str(datasets_dir), sources=["sr_rag_release", "evidence_inference"]
        ),
        "evaluation": EvaluationResource(strategies="sr_rag,naive", max_questions=2),
    }
    instance = _instance(home)

    def run(selection, partition=None):
        return dg.materialize(
            assets,
            selection=selection,
            partition_key=partition,
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )

    assert run([*corpus, benchmark_qa], "PFP").success
    assert run([benchmark_splits]).success
    assert run([evaluation_report], "PFP").success
    assert run([evaluation_summary]).success
    monkeypatch.setattr(
        "ebm_platform.defs.benchmark.evidence_inference_rows",
        lambda code, *args: sources.frame(
            [
                sources.row(
                    question_id="dup",
                    condition=code,
                    source="evidence_inference",
                    question=f"Question {n}?",
                    exact_answer="a",
                    split_kind="main",
                    gold_window_ids=["missing-window"],
                )
                for n in range(2)
            ]
        ),
    )
    assert not run([source_documents, evidence_windows, benchmark_qa], "ACL").success


def _instance(home: Path) -> dg.DagsterInstance:
    """The persistent instance `dagster dev` will open with DAGSTER_HOME=home."""
    from dagster._core.instance.ref import InstanceRef

    return dg.DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ui(tmp_path_factory, datasets_dir):
    root, home = tmp_path_factory.mktemp("ui") / "lake", tmp_path_factory.mktemp("ui-home")
    (root / "landing").mkdir(parents=True)
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("EBM_LAKE", str(root))
        _build(root, home, datasets_dir, monkeypatch)
    runs_before = {r.run_id for r in _instance(home).get_runs()}
    port = _free_port()
    env = dict(os.environ, DAGSTER_HOME=str(home), EBM_LAKE=str(root), EBM_DATASETS_DIR=str(datasets_dir))
    # SIGTERM back to its default in the child: a shell that started the suite may have it ignored
    server = subprocess.Popen(
        [
            str(Path(sys.executable).parent / "dagster"),
            "dev",
            "-w",
            "workspace.yaml",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(1)
        else:
            pytest.fail("dagster dev did not start within 180 s")
        yield f"http://127.0.0.1:{port}", _instance(home), runs_before
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:  # its instance is a throw-away folder: nothing to lose by not waiting the minute it may take
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:  # never leave a webserver and daemon behind
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=30)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def _open(browser, url: str, wait_for: str, shot: str, click: str | None = None, then: str | None = None) -> str:
    """Load a page, wait for `wait_for` to appear, dismiss the welcome dialog, optionally click
    `click` and wait for `then` (text, or `img[...]` for an element), save a screenshot and return
    the page's text."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    page = browser.new_page(viewport={"width": 1440, "height": 1000})
    page.goto(url)
    page.get_by_text(wait_for, exact=False).first.wait_for(timeout=90_000)
    skip = page.get_by_role("button", name="Skip")
    try:  # the welcome dialog opens a moment after the page on a fresh instance
        skip.first.wait_for(timeout=5_000)
        skip.first.click()
    except PlaywrightTimeout:
        pass
    if click:
        page.get_by_text(click, exact=True).first.click()
        target = page.locator(then) if then.startswith("img[") else page.get_by_text(then, exact=False)
        target.first.wait_for(timeout=60_000)
    page.wait_for_timeout(1500)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / shot), full_page=True)
    text = page.inner_text("body")
    page.close()
    return text


def test_the_ui_shows_lineage_partitions_a_failed_blocking_check_and_the_evaluation(ui, browser):
    base, instance, runs_before = ui
    graph = _open(browser, f"{base}/asset-groups", "Global asset lineage", "asset_graph.png")
    for group in ("sources", "corpus", "graph", "index", "benchmark", "betr", "retrieval", "evaluation"):
        assert group in graph
    partitions = _open(
        browser,
        f"{base}/assets/evidence_windows?view=partitions",
        "Partitions Selected",
        "evidence_windows_partitions.png",
    )
    assert "23 Partitions Selected" in partitions and "Materialized (2)" in partitions and "Missing (21)" in partitions
    checks = _open(
        browser,
        f"{base}/assets/benchmark_qa?view=checks",
        "benchmark_structure",
        "benchmark_checks.png",
        click="benchmark_structure",
        then="blocking asset check",
    )
    assert "This is a blocking asset check" in checks and "Failed" in checks and "ACL" in checks
    assert "unique_ids.passed" in checks  # the failing rule's own metadata
    summary = _open(browser, f"{base}/assets/evaluation_summary", "strategy_x_metric", "evaluation_summary.png")
    assert "strategy_x_metric" in summary and "sr_rag" in summary and "NC_proxy" in summary
    assert "naive" in summary and "Faith_proxy" in summary
    plots = _open(
        browser,
        f"{base}/assets/evaluation_summary",
        "strategy_x_metric",
        "evaluation_plots.png",
        click="[Show Markdown]",
        then='img[alt="evaluation_bars.png"]',
    )
    assert "Evaluation summary" in plots and "The paper's Table 2" in plots  # the plots above the tables
    # opening the UI over a built lake starts no run (the landing sensor finds what was built)
    time.sleep(40)
    new = [r for r in instance.get_runs() if r.run_id not in runs_before]
    assert not new, [
        (
            r.job_name,
            sorted(k.to_user_string() for k in r.asset_selection or []),
            {k: v for k, v in r.tags.items() if not k.startswith("dagster/run_")},
        )
        for r in new
    ]
