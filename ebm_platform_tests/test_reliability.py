"""Reliability suite (`make reliability`; skipped by `make test`): real processes killed with SIGKILL
mid-write, readers against a store being rewritten, load with malformed questions. Every test adds
a row to the table printed at the end (ebm_platform_tests/conftest.py).

States: lake A holds two real PFP articles, built through the real assets; B adds a grade-A
guideline and an empty (quarantined) file to the landing folder. A kill must leave each store in
state A or state B exactly (or a mismatch the readers detect and refuse with a clear error), and
the next run must equal a clean build of B.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ebm_platform_tests.conftest import REPO
from ebm_platform_tests.reliability_child import PARTITION, run

pytestmark = pytest.mark.reliability
ARTICLES = {"PMC1562433", "PMC2249589"}
BUSY = "busy"
KILLS_PER_STORE = 20
LOST_COLUMNS = ("documents", "windows", "graph rows", "index rows")
RESULTS: list[dict] = []


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO), "EBM_STORE_WAIT_S": "0"}


def _materialise(lake: Path, asset: str) -> None:
    names = ["source_documents", "evidence_windows", "pico_extractions"] if asset == "upstream" else [asset]
    assert run(lake, names)


def _pools(seed: int) -> pl.DataFrame:
    """Candidate pools drawn from the BETR model with known parameters (betr.fit.simulate)."""
    from ebm_platform.betr.fit import simulate

    pools = simulate(60, 1.0 + 0.3 * seed, {"A": 0, "B": -0.1, "C": -0.3, "D": -0.4, "E": -0.6}, seed=seed)
    return pools.with_columns(
        ("sim-" + pl.col("question_id")).alias("question_id"),
        pl.lit("simulated").alias("scorer"),
        pl.when(pl.col("question_id").str.slice(1).cast(pl.Int64) % 5 == 0)
        .then(pl.lit("validation"))
        .otherwise(pl.lit("train"))
        .alias("split"),
    )


@pytest.fixture(scope="module")
def states(tmp_path_factory, datasets_dir, environment_models) -> dict[str, Path]:
    """Pre-write lakes per store: the store holds A, its inputs are B."""
    from ebm_platform.conditions import load_catalogue
    from ebm_platform.corpus.importers import import_dataset
    from ebm_platform.settings import DEFAULT_CATALOGUE
    from ebm_platform.versions import write_parquet
    from ebm_platform_tests.test_readers import GUIDELINE

    root = tmp_path_factory.mktemp("reliability")
    lake_a = root / "A" / "lake"
    import_dataset(
        "evidence-inference", datasets_dir, lake_a / "landing", load_catalogue(DEFAULT_CATALOGUE), ids=ARTICLES
    )
    for asset in ("upstream", "knowledge_graph", "window_index"):
        _materialise(lake_a, asset)
    write_parquet(_pools(1), lake_a / "assets" / "candidate_pools.parquet")
    _materialise(lake_a, "betr_parameters")

    documents = root / "documents" / "lake"
    shutil.copytree(lake_a, documents)
    (documents / "landing" / PARTITION / "guideline.md").write_bytes(GUIDELINE)
    (documents / "landing" / PARTITION / "empty.md").write_bytes(b"")
    graph = root / "graph" / "lake"
    shutil.copytree(documents, graph)
    _materialise(graph, "upstream")
    betr = root / "betr" / "lake"
    shutil.copytree(lake_a, betr)
    write_parquet(_pools(2), betr / "assets" / "candidate_pools.parquet")
    return {"source_documents": documents, "knowledge_graph": graph, "window_index": graph, "betr_parameters": betr}


def observe_documents(lake: Path) -> dict | str:
    import duckdb

    from ebm_platform.corpus.quarantine import current_rows

    path = lake / "assets" / "source_documents" / f"{PARTITION}.parquet"
    with duckdb.connect(str(lake / "warehouse.duckdb"), read_only=True) as conn:
        quarantined = len(current_rows(conn, lake / "assets" / "source_documents"))
    return {"documents": pl.read_parquet(path).height if path.exists() else 0, "quarantined": quarantined}


def observe_graph(lake: Path) -> dict | str:
    from ebm_platform.graph.channel import open_graph
    from ebm_platform.versions import StoreBusyError

    try:
        store, entities = open_graph(lake / "stores" / "kuzu" / "graph.kz", lake / "assets" / "knowledge_graph", 0)
    except StoreBusyError:
        return BUSY
    p = {"p": PARTITION}
    with store:
        return {
            "documents": store.count("MATCH (d:Document) WHERE d.partition = $p RETURN count(*)", p),
            "windows": store.count("MATCH (w:Window) WHERE w.partition = $p RETURN count(*)", p),
            "entities": store.count("MATCH (e:Entity) RETURN count(*)"),
            "relations": store.count("MATCH ()-[r:RELATES]->() WHERE r.partition = $p RETURN count(*)", p),
            "attributes": store.count("MATCH (a:Attribute) WHERE a.partition = $p RETURN count(*)", p),
            "entity_rows": entities.height,
        }


def observe_index(lake: Path) -> dict | str:
    from ebm_platform.index.window_index import WindowIndex

    index = WindowIndex(lake / "stores" / "lancedb")
    if index.text_index_problems():
        return BUSY
    return {
        "rows": index.count(PARTITION),
        "full_text_hits": index.full_text("knee pain exercise", 500).height,
        "dense_rows": index.dense(np.ones(384, dtype=np.float32), 500).height,
    }


def observe_betr(lake: Path) -> dict | str:
    raw = json.loads((lake / "stores" / "betr" / "parameters.json").read_text())
    return {
        "a": round(raw["a"], 6),
        "tau": raw["tau"],
        "u": json.dumps(raw["u"], sort_keys=True),
        "train_pairs": raw["provenance"]["train_pairs"],
    }


# which lost-data column each observed count feeds
LOSS = {
    "documents": "documents",
    "windows": "windows",
    "entities": "graph rows",
    "relations": "graph rows",
    "attributes": "graph rows",
    "entity_rows": "graph rows",
    "rows": "index rows",
    "full_text_hits": "index rows",
    "dense_rows": "index rows",
}


def _lost(expected: dict, seen: dict) -> dict[str, int]:
    lost = dict.fromkeys(LOST_COLUMNS, 0)
    for key, value in expected.items():
        if key in LOSS and isinstance(value, int):
            lost[LOSS[key]] += max(0, value - int(seen.get(key, 0)))
    return lost


def _child(args: list[str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "ebm_platform_tests.reliability_child", *args],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )


def _run_child(lake: Path, asset: str, barrier: str | None = None, delay: float | None = None) -> tuple[str, float]:
    """Run the writer; return how it ended ('completed', 'killed', 'failed') and its write seconds."""
    proc = _child(["materialise", str(lake), asset, *([barrier] if barrier else [])])
    assert proc.stdout.readline().strip() == "materialising"
    started = time.perf_counter()
    if delay is not None:
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
    code = proc.wait(timeout=600)
    seconds = time.perf_counter() - started
    return ("killed" if code == -signal.SIGKILL else "completed" if code == 0 else "failed"), seconds


def crash_sweep(
    name: str, asset: str, pre: Path, barriers: list[str], observe: Callable[[Path], dict | str], tmp: Path
) -> None:
    """KILLS_PER_STORE kills (the barriers, then a delay sweep over the write) of a child writing
    `asset`; after each: the state is A or B exactly (or detected as busy), the next run equals B."""
    state_a = observe(pre)
    clean = tmp / "clean"
    shutil.copytree(pre, clean)
    outcome, duration = _run_child(clean, asset)
    assert outcome == "completed"
    state_b = observe(clean)
    assert state_a != state_b and BUSY not in (state_a, state_b), (state_a, state_b)  # else the test could not fail
    plans = [(b, None) for b in barriers]
    delays = np.linspace(0.05, 1.0, KILLS_PER_STORE - len(plans)) * duration
    plans += [(None, float(d)) for d in delays]
    row = {"test": f"crash: {name}", "runs": 0, "failures": 0, **dict.fromkeys(LOST_COLUMNS, 0), "notes": []}
    states = {"A": 0, "B": 0, BUSY: 0, "mixture": 0}
    for n, (barrier, delay) in enumerate(plans):
        work = tmp / f"kill-{n}"
        shutil.copytree(pre, work)
        how, _ = _run_child(work, asset, barrier, delay)
        seen = observe(work)
        label = "A" if seen == state_a else "B" if seen == state_b else BUSY if seen == BUSY else "mixture"
        states[label] += 1
        _materialise(work, asset)  # the next run, in this process
        recovered = observe(work)
        lost = _lost(state_b, recovered if isinstance(recovered, dict) else {})
        if label == "mixture":
            lost = {k: lost[k] + v for k, v in _lost(state_a, seen).items()}
        row["runs"] += 1
        failed = label == "mixture" or recovered != state_b or how == "failed"
        row["failures"] += failed
        if failed:
            row["notes"].append(
                f"kill {n} ({barrier or f'{delay:.2f} s'}): {how}, seen {seen}, after rerun {recovered}"
            )
        for key, value in lost.items():
            row[key] += value
        shutil.rmtree(work)
    row["notes"].insert(
        0,
        f"after the kill: {states['A']} in state A, {states['B']} in state B, {states[BUSY]} "
        f"detected as being rebuilt, {states['mixture']} mixtures; write {duration:.1f} s",
    )
    RESULTS.append(row)
    assert row["failures"] == 0, row["notes"]
    assert all(row[c] == 0 for c in LOST_COLUMNS), row


def test_crash_source_documents(states, tmp_path):
    crash_sweep(
        "source_documents (parquet + DuckDB)",
        "source_documents",
        states["source_documents"],
        ["duckdb-committed", "parquet-before-rename"],
        observe_documents,
        tmp_path,
    )


def test_crash_knowledge_graph(states, tmp_path):
    crash_sweep(
        "knowledge_graph (Kùzu + parquet)",
        "knowledge_graph",
        states["knowledge_graph"],
        ["graph-committed-in-copy", "graph-renamed-before-parquet", "parquet-before-rename"],
        observe_graph,
        tmp_path,
    )


def test_crash_window_index(states, tmp_path):
    crash_sweep(
        "window_index (LanceDB + FTS)",
        "window_index",
        states["window_index"],
        ["lance-staging", "lance-committed-before-fts", "lance-before-compaction"],
        observe_index,
        tmp_path,
    )


def test_crash_betr_parameters(states, tmp_path):
    crash_sweep(
        "betr_parameters (JSON)",
        "betr_parameters",
        states["betr_parameters"],
        ["betr-before-rename"],
        observe_betr,
        tmp_path,
    )


def test_readers_during_writes(states, tmp_path):
    """`ask`, graph queries and candidate pools in a loop in another process while knowledge_graph and
    window_index are rewritten, alternating between states B and A, for ten writes."""
    lake = tmp_path / "lake"
    shutil.copytree(states["knowledge_graph"], lake)
    _materialise(lake, "knowledge_graph")
    _materialise(lake, "window_index")
    inputs = {s: tmp_path / s for s in ("A", "B")}
    shutil.copytree(lake / "assets", inputs["B"])
    shutil.copytree(states["source_documents"] / "assets", inputs["A"])  # upstream still from lake A
    stop = tmp_path / "stop"
    env = {**_env(), "EBM_STORE_WAIT_S": "10"}
    reader = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "ebm_platform_tests.reliability_child",
            "read",
            str(lake),
            str(stop),
            "Does exercise therapy reduce knee pain in patellofemoral pain?",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=REPO,
    )
    lines: list[str] = []
    pump = threading.Thread(target=lambda: lines.extend(reader.stdout), daemon=True)
    pump.start()
    writes = 0
    try:
        time.sleep(5)
        for n in range(10):
            source = inputs["A" if n % 2 == 0 else "B"]
            for asset in ("source_documents", "evidence_windows", "pico_extractions"):
                shutil.copy(source / asset / f"{PARTITION}.parquet", lake / "assets" / asset / f"{PARTITION}.parquet")
            for asset in ("knowledge_graph", "window_index"):
                _materialise(lake, asset)
                writes += 1
        time.sleep(3)
    finally:
        stop.touch()
        reader.wait(timeout=300)
        pump.join(timeout=10)
    outcomes = [json.loads(line) for line in lines if line.startswith("{")]
    counts: dict[str, int] = {}
    for o in outcomes:
        key = o["outcome"] if not o["outcome"].startswith("crash") else "crash"
        counts[key] = counts.get(key, 0) + 1
    bad = [o for o in outcomes if o["outcome"].startswith(("crash", "partial"))]
    RESULTS.append(
        {
            "test": f"readers during {writes} writes (ask, graph query, candidate pool)",
            "runs": len(outcomes),
            "failures": len(bad),
            **dict.fromkeys(LOST_COLUMNS, 0),
            "notes": [f"outcomes: {counts}"] + [o["outcome"] for o in bad[:3]],
        }
    )
    assert len(outcomes) >= 20 and not bad, counts


LOAD_QUESTIONS = [
    "Does exercise therapy reduce knee pain in patellofemoral pain?",
    "Is hip strengthening better than knee strengthening for anterior knee pain?",
    "Does patellar taping reduce pain during stair climbing?",
    "What is the effect of foot orthoses on patellofemoral pain at 12 weeks?",
    "Do quadriceps exercises improve function in adolescents with knee pain?",
    "How long should a rehabilitation programme for patellofemoral pain last?",
    "Does education plus exercise beat exercise alone for runners with knee pain?",
    "Is there evidence that manual therapy helps patellofemoral pain?",
]


def test_load_with_malformed_questions(states, tmp_path):
    """200 asks from 4 threads (sr_rag, naive, meta_rag, med_r2; 20% malformed) on lake B."""
    from benchmarks.bench_load import load_run

    lake = tmp_path / "lake"
    shutil.copytree(states["knowledge_graph"], lake)
    for asset in ("knowledge_graph", "window_index"):
        _materialise(lake, asset)
    report = load_run(lake, LOAD_QUESTIONS)
    RESULTS.append(
        {
            "test": "load: 200 asks, 4 threads, 20% malformed",
            "runs": report["calls"],
            "failures": report["crashes"] + report["wrong_outcomes"],
            **dict.fromkeys(LOST_COLUMNS, 0),
            "notes": [
                f"outcomes {report['outcomes']}; p50 {report['p50']:.2f} s, p95 {report['p95']:.2f} s "
                f"(same-run serial baseline p50 {report['baseline_p50']:.2f} s, p95 "
                f"{report['baseline_p95']:.2f} s); resident memory {report['rss_first_mb']:.0f} MB after "
                f"the first 20 calls, {report['rss_end_mb']:.0f} MB at the end ({report['rss_growth']:+.1%})"
            ],
        }
    )
    assert report["crashes"] == 0 and report["wrong_outcomes"] == 0
    assert report["rss_growth"] <= 0.10


SERIAL_BUILD = """
from pathlib import Path
from ebm_platform.runs import run_all_partitions
from ebm_platform.conditions import active_catalogue
from ebm_platform.corpus.importers import import_all
from ebm_platform.settings import get_settings
s = get_settings()
# the trial datasets only: the graded evidence adds encoding time, not another way for a backfill to fail
import_all(Path(s.datasets_dir), s.landing_dir, active_catalogue(), s.lake / "reports", progress=print,
           datasets=("evidence-inference", "pubmedqa"))
run_all_partitions(global_job="graph_global_job")
"""


def lake_counts(lake: Path, codes: list[str]) -> dict[str, dict[str, int]]:
    """Per partition: rows of each partitioned parquet asset, the graph's nodes and the index's rows."""
    from ebm_platform.graph.channel import open_graph
    from ebm_platform.index.window_index import WindowIndex

    index = WindowIndex(lake / "stores" / "lancedb")
    store, _ = open_graph(lake / "stores" / "kuzu" / "graph.kz", lake / "assets" / "knowledge_graph", 0)
    counts = {}
    with store:
        for code in codes:
            row = {
                a: pl.read_parquet(p).height if (p := lake / "assets" / a / f"{code}.parquet").exists() else 0
                for a in ("source_documents", "evidence_windows", "pico_extractions", "benchmark_qa")
            }
            for label in ("Document", "Window", "Attribute"):
                row[f"graph {label}"] = store.count(
                    f"MATCH (n:{label}) WHERE n.partition = $p RETURN count(*)", {"p": code}
                )
            row["index rows"] = index.count(code)
            counts[code] = row
    return counts


# which lost-data column each counted key feeds
BACKFILL_LOSS = {
    "documents": ["source_documents"],
    "windows": ["evidence_windows"],
    "graph rows": ["graph Document", "graph Window", "graph Attribute"],
    "index rows": ["index rows"],
}


def _ask_loop(env: dict[str, str], stop: Path, log: list[dict]) -> None:
    """`ebm ask` as a new process again and again until `stop` exists; one outcome per call."""
    ebm = str(Path(sys.executable).parent / "ebm")
    n = 0
    while not stop.exists():
        question = LOAD_QUESTIONS[n % len(LOAD_QUESTIONS)]
        done = subprocess.run(
            [ebm, "ask", question, "--json"], env=env, cwd=REPO, capture_output=True, text=True, timeout=600
        )
        err = done.stderr.lower()
        answered = done.returncode == 0 and bool(json.loads(done.stdout).get("core_answer"))
        outcome = (
            "answered"
            if answered
            else "busy (clear retry error)"
            if "is being rebuilt" in err
            else f"failed: exit {done.returncode}: {(done.stderr or done.stdout)[-300:]}"
        )
        log.append({"outcome": outcome, "lock_error": "lock" in err})
        n += 1


def test_backfill_of_every_partition_through_the_daemon_while_asking(tmp_path, datasets_dir, environment_models):
    """All 23 partitions as one backfill submitted to a real instance (queued run coordinator, 2
    concurrent runs, multiprocess executor, writer pools; the backfill daemon started by `ebm
    backfill`) while `ebm ask` runs in a loop; the counts must equal the serial build's."""
    from ebm_platform.defs.partitions import conditions_partitions

    home, lake = tmp_path / "home", tmp_path / "lake"
    home.mkdir()
    # the repository's instance settings with storage under `home`; automation off, so that only the
    # backfill's runs are measured (the automation that follows a change is tested in test_automation)
    instance_yaml = (REPO / "dagster.yaml").read_text().replace("data_lake/.dagster", str(home / ".dagster"))
    (home / "dagster.yaml").write_text(instance_yaml + "auto_materialize:\n  enabled: false\n  use_sensors: false\n")
    env = {
        **_env(),
        "DAGSTER_HOME": str(home),
        "EBM_LAKE": str(lake),
        "EBM_DATASETS_DIR": str(datasets_dir),
        "EBM_STORE_WAIT_S": "30",
    }
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-c", SERIAL_BUILD],
        env={**env, "EBM_RUN_WORKERS": "1"},
        cwd=REPO,
        check=True,
        timeout=3600,
        stdout=subprocess.DEVNULL,
    )
    serial_s = time.monotonic() - started
    codes = conditions_partitions.get_partition_keys()
    serial = lake_counts(lake, codes)
    stop, asks = tmp_path / "stop", []
    asker = threading.Thread(target=_ask_loop, args=(env, stop, asks), daemon=True)
    asker.start()
    try:
        done = subprocess.run(
            [str(Path(sys.executable).parent / "ebm"), "backfill", "--json"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=3 * 3600,
        )
    finally:
        stop.touch()
        asker.join(timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    outcome = json.loads(done.stdout.strip().splitlines()[-1])
    rebuilt = lake_counts(lake, codes)
    failed_asks = [a["outcome"] for a in asks if a["outcome"].startswith("failed")]
    lock_errors = sum(a["lock_error"] for a in asks)
    differ = sorted(code for code in codes if rebuilt[code] != serial[code])
    by_outcome: dict[str, int] = {}
    for a in asks:
        by_outcome[a["outcome"][:40]] = by_outcome.get(a["outcome"][:40], 0) + 1
    RESULTS.append(
        {
            "test": "backfill of 23 partitions via the daemon (2 concurrent runs) while `ebm ask` loops",
            "runs": sum(outcome["runs"].values()) + len(asks),
            "failures": len(outcome["failed_partitions"]) + len(failed_asks) + lock_errors,
            **{
                column: sum(max(0, serial[c][k] - rebuilt[c][k]) for c in codes for k in keys)
                for column, keys in BACKFILL_LOSS.items()
            },
            "notes": [
                f"runs {outcome['runs']} in {outcome['seconds']:.0f} s (serial build, one run "
                f"at a time, EBM_RUN_WORKERS=1, no ask loop, incl. import {serial_s:.0f} s); "
                f"asks {by_outcome}; lock errors {lock_errors}; "
                f"partitions whose counts differ from the serial build: {differ or 'none'}"
            ]
            + failed_asks[:3],
        }
    )
    assert outcome["runs"] == {"SUCCESS": 23} and not outcome["failed_partitions"]
    assert not failed_asks and lock_errors == 0 and len(asks) >= 5
    assert not differ, {c: (serial[c], rebuilt[c]) for c in differ}


DISTRIBUTED_CODES = ["AT", "BSI", "PFP"]
DISTRIBUTED_QUESTIONS = LOAD_QUESTIONS[:3]
WORKER_LOST_S = 300  # the test's Redis visibility timeout: longer than any step of its three partitions


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(ready: Callable[[], bool], what: str, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout_s:.0f} s")
        time.sleep(0.5)


def _services(stack) -> dict[str, str]:
    """Debian's PostgreSQL (a fresh cluster, run as the postgres user when this is root) and
    redis-server on free ports, stopped when `stack` closes; skipped with the reason when missing."""
    import tempfile

    initdb = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    redis = shutil.which("redis-server")
    if not initdb or not redis:
        pytest.skip("postgresql or redis-server is not installed (make reliability installs both with apt-get)")
    bin_dir = initdb[-1].parent
    root = Path(tempfile.mkdtemp(prefix="ebm-pg-"))
    stack.callback(shutil.rmtree, root, True)
    # runuser lives in /usr/sbin, which a root shell's PATH may leave out
    runuser = shutil.which("runuser", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/sbin") or "runuser"
    as_user = [runuser, "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if as_user:
        shutil.chown(root, "postgres")
    subprocess.run(
        [*as_user, str(bin_dir / "initdb"), "-D", str(root / "db"), "-A", "trust", "-U", "ebm"],
        check=True,
        capture_output=True,
    )
    pg_port, redis_port = _free_port(), _free_port()
    postgres = subprocess.Popen(
        [
            *as_user,
            str(bin_dir / "postgres"),
            "-D",
            str(root / "db"),
            "-p",
            str(pg_port),
            "-k",
            str(root),
            "-c",
            "listen_addresses=127.0.0.1",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    stack.callback(postgres.wait, 60)
    stack.callback(postgres.terminate)
    server = subprocess.Popen(
        [redis, "--port", str(redis_port), "--save", "", "--appendonly", "no"], stdout=subprocess.DEVNULL
    )
    stack.callback(server.wait, 60)
    stack.callback(server.terminate)
    ready = [str(bin_dir / "pg_isready"), "-h", "127.0.0.1", "-p", str(pg_port)]
    _wait_for(lambda: subprocess.run(ready, capture_output=True).returncode == 0, "postgres")
    subprocess.run(
        [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(pg_port), "-U", "ebm", "dagster"], check=True
    )
    return {
        "EBM_POSTGRES_URL": f"postgresql+psycopg2://ebm@127.0.0.1:{pg_port}/dagster",
        "EBM_CELERY_BROKER": f"redis://127.0.0.1:{redis_port}/0",
        "EBM_CELERY_BACKEND": f"redis://127.0.0.1:{redis_port}/1",
    }


def _children(pid: int) -> list[int]:
    """The process ids of `pid`'s children (Linux /proc)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(c) for c in path.read_text().split()] if path.exists() else []


def _ranked_ids(env: dict[str, str]) -> list[list[str]]:
    ebm = str(Path(sys.executable).parent / "ebm")
    return [
        [
            c["window_id"]
            for c in json.loads(
                subprocess.run(
                    [ebm, "ask", q, "--json"],
                    env=env,
                    cwd=REPO,
                    capture_output=True,
                    text=True,
                    check=True,
                    timeout=600,
                ).stdout
            )["citations"]
        ]
        for q in DISTRIBUTED_QUESTIONS
    ]


def test_backfill_on_postgres_and_two_celery_workers_killed_mid_step(tmp_path, datasets_dir, environment_models):
    """The production profile for real: instance storage on PostgreSQL, the queued run coordinator and
    the daemon, partition steps on two Celery workers (Redis broker). Three partitions are built
    serially first; the backfill rebuilds them and the global graph assets through the workers while
    one worker's step process and then a whole worker are killed with SIGKILL mid-step; the counts and
    `ebm ask`'s ranked windows must equal the serial build's."""
    from contextlib import ExitStack

    home, lake = tmp_path / "home", tmp_path / "lake"
    home.mkdir()
    base = {**_env(), "EBM_LAKE": str(lake), "EBM_DATASETS_DIR": str(datasets_dir), "EBM_STORE_WAIT_S": "30"}
    local_home = tmp_path / "local-home"
    local_home.mkdir()
    (local_home / "dagster.yaml").write_text(
        (REPO / "dagster.yaml").read_text().replace("data_lake/.dagster", str(local_home / ".dagster"))
    )
    serial = SERIAL_BUILD.replace("run_all_partitions(", f"run_all_partitions(codes={DISTRIBUTED_CODES!r}, ")
    subprocess.run(
        [sys.executable, "-c", serial],
        env={**base, "DAGSTER_HOME": str(local_home), "EBM_RUN_WORKERS": "1"},
        cwd=REPO,
        check=True,
        timeout=3600,
        stdout=subprocess.DEVNULL,
    )
    local_counts = lake_counts(lake, DISTRIBUTED_CODES)
    local_ranked = _ranked_ids({**base, "DAGSTER_HOME": str(local_home)})
    with ExitStack() as stack:
        env = {
            **base,
            **_services(stack),
            "DAGSTER_HOME": str(home),
            "EBM_EXECUTOR": "celery",
            "EBM_DAGSTER_STATE": str(home / "state"),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # dagster-celery execs celery
        }
        (home / "dagster.yaml").write_text(
            (REPO / "deploy" / "production" / "dagster.yaml").read_text()
            + "auto_materialize:\n  enabled: false\n  use_sensors: false\n"
        )
        validate = subprocess.run(
            [
                str(Path(sys.executable).parent / "dagster"),
                "definitions",
                "validate",
                "-w",
                str(REPO / "workspace.yaml"),
            ],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert validate.returncode == 0, validate.stderr[-2000:]  # the production profile's definitions load
        celery_config = tmp_path / "celery.yaml"  # the production file with a test-sized visibility timeout
        production = (REPO / "deploy" / "production" / "celery.yaml").read_text()
        assert "visibility_timeout: 7200" in production
        celery_config.write_text(
            production.replace(
                "visibility_timeout: 7200",
                f"visibility_timeout: {WORKER_LOST_S}\n        unacked_restore_interval: 5\n"
                "        unacked_restore_throttle: 1",
            )
        )
        workers = []
        for n in (1, 2):
            log = open(tmp_path / f"worker{n}.log", "w")  # noqa: SIM115 (closed with the stack)
            stack.callback(log.close)
            worker = subprocess.Popen(
                [
                    str(Path(sys.executable).parent / "dagster-celery"),
                    "worker",
                    "start",
                    "-A",
                    "dagster_celery.app",
                    "-y",
                    str(celery_config),
                    "-n",
                    f"ebm{n}",
                ],
                env=env,
                cwd=REPO,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            stack.callback(lambda w=worker: os.killpg(w.pid, signal.SIGKILL) if w.poll() is None else None)
            workers.append(worker)
        _wait_for(
            lambda: all("ready" in (tmp_path / f"worker{n}.log").read_text() for n in (1, 2)), "celery workers", 120
        )
        killed: list[str] = []

        def running_step(n: int) -> str | None:
            """The id of the step task worker `n` received last, while it has not finished it."""
            log = (tmp_path / f"worker{n}.log").read_text()
            received = re.findall(r"Task execute_plan\[([0-9a-f-]+)\] received", log)
            return received[-1] if received and f"{received[-1]}] succeeded" not in log else None

        def kill_two_busy_workers() -> None:
            """Mid-step, as the out-of-memory killer or a lost host would: first SIGKILL the step process
            of the first worker seen executing a step (the worker hands the step back at once), then
            the whole of the next worker seen mid-step, its process group (Redis hands its step to the
            other worker after the visibility timeout)."""
            deadline = time.monotonic() + 1800
            while time.monotonic() < deadline and len(killed) < 2:
                for n, worker in enumerate(workers, 1):
                    if (task := running_step(n)) and not any(task in k for k in killed):
                        time.sleep(3)
                        if running_step(n) != task:
                            continue  # finished within the 3 s: not mid-step
                        if not killed:
                            (celery_main,) = _children(worker.pid)  # dagster-celery execs celery's worker
                            pool = _children(celery_main)  # its pool process (worker_concurrency 1)
                            for pid in pool:
                                os.kill(pid, signal.SIGKILL)
                            killed.append(f"worker {n}'s step process ({len(pool)}) in task {task}")
                        else:
                            os.killpg(worker.pid, signal.SIGKILL)
                            killed.append(f"worker {n} whole (process group) in task {task}")
                        break
                time.sleep(0.5)

        killer = threading.Thread(target=kill_two_busy_workers, daemon=True)
        killer.start()
        started = time.monotonic()
        done = subprocess.run(
            [str(Path(sys.executable).parent / "ebm"), "backfill", "--codes", ",".join(DISTRIBUTED_CODES), "--json"],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=3 * 3600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        outcome = json.loads(done.stdout.strip().splitlines()[-1])
        global_run = subprocess.run(
            [
                str(Path(sys.executable).parent / "dagster"),
                "job",
                "execute",
                "-m",
                "ebm_platform.definitions",
                "-a",
                "defs",
                "-j",
                "graph_global_job",
            ],
            env=env,
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        seconds = time.monotonic() - started
        rebuilt = lake_counts(lake, DISTRIBUTED_CODES)
        ranked = _ranked_ids(env)
    differ = sorted(code for code in DISTRIBUTED_CODES if rebuilt[code] != local_counts[code])
    RESULTS.append(
        {
            "test": "backfill of 3 partitions + global graph assets on PostgreSQL + 2 Celery workers: a step process killed, then a whole worker",
            "runs": sum(outcome["runs"].values()) + 1,
            "failures": len(outcome["failed_partitions"]) + (global_run.returncode != 0),
            **{
                column: sum(max(0, local_counts[c][k] - rebuilt[c][k]) for c in DISTRIBUTED_CODES for k in keys)
                for column, keys in BACKFILL_LOSS.items()
            },
            "notes": [
                f"runs {outcome['runs']} in {seconds:.0f} s; killed {killed or 'none (no step seen in time)'}; "
                f"partitions whose counts differ from the serial build: {differ or 'none'}; "
                f"ask ranked windows equal on {sum(a == b for a, b in zip(ranked, local_ranked))} of 3 questions"
            ],
        }
    )
    assert global_run.returncode == 0, global_run.stderr[-3000:]
    assert outcome["runs"].get("SUCCESS", 0) >= len(DISTRIBUTED_CODES) and not outcome["failed_partitions"]
    assert len(killed) == 2 and not differ and ranked == local_ranked
