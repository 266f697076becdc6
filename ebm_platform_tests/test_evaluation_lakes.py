"""Evaluation lakes: built beside production through the same assets, reused by key, and never
touching the production lake's partitions."""

import gc
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from dagster import DagsterInstance

from ebm_platform.cli import main
from ebm_platform.settings import get_settings
from ebm_platform_tests.test_readers import GUIDELINE


def _snapshot(root):
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "eval" not in p.relative_to(root).parts
    }


def test_evaluation_run_leaves_production_untouched(lake, datasets_dir, tmp_path, monkeypatch, capsys):
    records = json.loads((datasets_dir / "pubmedqa" / "ori_pqal_dev.json").read_text())
    small = tmp_path / "datasets"
    (small / "pubmedqa").mkdir(parents=True)
    (small / "pubmedqa" / "ori_pqal_dev.json").write_text(json.dumps(dict(list(records.items())[:3])))
    (lake / "landing" / "PFP").mkdir()
    (lake / "landing" / "PFP" / "guideline.md").write_bytes(GUIDELINE)
    (lake / "assets" / "source_documents").mkdir(parents=True)
    (lake / "assets" / "source_documents" / "PFP.parquet").write_bytes(b"stand-in for a production partition")
    before = _snapshot(lake)
    monkeypatch.setenv("EBM_DATASETS_DIR", str(small))
    get_settings.cache_clear()
    args = [
        "eval",
        "retrieval",
        "--benchmark",
        "pubmedqa",
        "--split",
        "validation",
        "--strategies",
        "sr_rag,naive",
        "--json",
    ]
    assert main(args) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["questions_kept"] == 3 and set(summary["results"]) == {"sr_rag", "naive"}
    for metrics in summary["results"].values():
        assert metrics["questions"] == 3 and metrics["R@10"] >= 0.5  # most of the source abstract's windows
    assert summary["results"]["naive"]["Hit@10"] == 1.0  # three abstracts: the gold one is always retrieved
    assert (
        set(summary["per_question"]["naive"]) == set(summary["per_question"]["sr_rag"])
        and len(summary["per_question"]["naive"]) == 3
    )  # (R@10, Hit@10, reciprocal rank) per question id
    low, high = summary["results"]["sr_rag"]["interval_95"]["MRR"]
    assert low <= summary["results"]["sr_rag"]["MRR"] <= high
    paired = summary["results"]["naive"]["sr_rag_minus_this"]["MRR"]
    assert paired["n"] == 3 and paired["wins"] + paired["ties"] + paired["losses"] == 3
    assert summary["lake"].startswith(str(lake / "eval" / "pubmedqa-"))
    assert _snapshot(lake) == before
    first = json.loads((Path(summary["lake"]) / "COMPLETE.json").read_text())
    assert first["resumed"] is False and first["encodings_reused"] is False  # built from empty
    # the build's runs are in the lake's own instance (an ephemeral one ran them all in the builder's process)
    built = DagsterInstance.from_config(str(Path(summary["lake"]) / ".dagster")).get_runs()
    assert {run.job_name for run in built} >= {"models_job", "corpus_index_job", "graph_global_job"}
    assert main(args) == 0
    assert "reusing evaluation lake" in capsys.readouterr().err

    # an interrupted build (no marker, extraction missing) resumes from the outputs it finished
    eval_lake = Path(summary["lake"])  # (a glob would also match the lake's `.lock` file beside it)
    (eval_lake / "COMPLETE.json").unlink()
    (eval_lake / "assets" / "pico_extractions" / "ALL.parquet").unlink()
    windows_before = (eval_lake / "assets" / "evidence_windows" / "ALL.parquet").read_bytes()
    gc.collect()  # the earlier runs' read-only Kùzu handles (this process) must close before the child writes
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "resuming ALL: reusing source_documents, evidence_windows" in captured.err
    assert (eval_lake / "assets" / "pico_extractions" / "ALL.parquet").is_file()
    assert (eval_lake / "assets" / "evidence_windows" / "ALL.parquet").read_bytes() == windows_before
    assert json.loads(captured.out)["questions_kept"] == 3
    assert json.loads((eval_lake / "COMPLETE.json").read_text())["resumed"] is True

    # --rebuild recomputes every asset, but the window index copies the encodings it already holds:
    # the record says so, so that bench_builds never calls that build one from empty
    gc.collect()
    assert main([*args, "--rebuild"]) == 0
    capsys.readouterr()
    rebuilt = json.loads((eval_lake / "COMPLETE.json").read_text())
    assert rebuilt["resumed"] is False and rebuilt["encodings_reused"] is True


HOLD_LOCK = """
import fcntl, sys, time
from pathlib import Path
lake = Path(sys.argv[1])
lake.parent.mkdir(parents=True, exist_ok=True)
with open(lake.parent / f"{lake.name}.lock", "a+") as handle:
    fcntl.flock(handle, fcntl.LOCK_EX)
    print("locked", flush=True)
    time.sleep(1.5)
    lake.mkdir()
    (lake / "COMPLETE.json").write_text("{}")
"""


def test_a_second_build_of_one_lake_waits_for_the_first(tmp_path):
    from ebm_platform.evaluation.lakes import MARKER, lake_lock

    lake = tmp_path / "eval" / "pubmedqa-0123456789ab"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(lake)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    messages = []
    with lake_lock(lake, messages.append):
        assert (lake / MARKER).is_file()  # the first builder finished before the second got in
    assert messages == [f"another process is building {lake}; waiting for it ..."]
    holder.wait(timeout=10)


PARENT = """
import os, sys, time
from ebm_platform.evaluation.lakes import spawn_builder
child = spawn_builder([sys.executable, "-c", "import time; time.sleep(60)"], dict(os.environ))
print(child.pid, flush=True)
time.sleep(60)
"""


def _alive(pid: int) -> bool:
    try:
        state = open(f"/proc/{pid}/status").read().split("State:")[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def test_the_builder_dies_with_the_process_that_started_it():
    # SIGTERM ignored in the parent (as under some job runners; the child would inherit that) must not save the builder
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT],
        stdout=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )
    child = int(parent.stdout.readline())
    assert _alive(child)
    os.kill(parent.pid, signal.SIGKILL)  # a hard kill: no handler in the parent runs
    parent.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(child)


def test_an_evaluation_lake_never_ranks_with_a_model_it_did_not_train_or_name(tmp_path):
    """A PubMedQA lake whose earlier run borrowed a reranker, with no Evidence Inference lake of this
    code to borrow from now: the stale copy is removed and the hand-set scorer ranks, as reported."""
    from types import SimpleNamespace

    from ebm_platform.evaluation.retrieval_eval import ensure_reranker
    from ebm_platform.retrieval.learned import reranker_path

    lake = tmp_path / "eval" / "pubmedqa-abc"
    stale = reranker_path(lake)
    stale.mkdir(parents=True)
    (stale / "model.txt").write_text("borrowed by an earlier run")
    retriever = SimpleNamespace(lake=lake, reranker=SimpleNamespace(learned="the stale model"))
    report = ensure_reranker(retriever, "pubmedqa", tmp_path, progress=lambda line: None)
    assert report == {"source": "none: hand-set scorer"}
    assert retriever.reranker.learned is None and not stale.exists()


def test_an_evaluation_lake_under_a_relative_lake_gets_an_absolute_dagster_home(tmp_path, monkeypatch):
    """Without EBM_LAKE the lake is `data_lake` and an evaluation lake `data_lake/eval/...`: Dagster
    refuses a relative DAGSTER_HOME, so the build's instance folder is absolute."""
    from ebm_platform.evaluation.lakes import LAKE_INSTANCE, lake_instance

    monkeypatch.chdir(tmp_path)
    home = lake_instance(Path("data_lake/eval/evidence-inference-0123456789ab"))
    assert home.is_absolute() and home == tmp_path / "data_lake/eval/evidence-inference-0123456789ab/.dagster"
    assert (home / "dagster.yaml").read_text() == LAKE_INSTANCE
    monkeypatch.setenv("DAGSTER_HOME", str(home))  # what the build's child process gets
    assert DagsterInstance.get().root_directory == str(home)
