"""Load on the query path: 200 `ask` calls from 4 threads against the demo lake (a mix of four
strategies over 160 seeded benchmark questions, plus 40 malformed questions that must be refused),
beside the same-run serial baseline (the first 40 valid calls, one thread). Reports crashes,
refusals, p50 / p95 and resident memory after the first 20 calls and at the end."""

from __future__ import annotations

import random
import statistics
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import polars as pl

from ebm_platform.retrieval.ask import ask
from ebm_platform.retrieval.pipeline import QuestionError
from ebm_platform.settings import get_settings

STRATEGIES = ("sr_rag", "naive", "meta_rag", "med_r2")
MALFORMED = ("", "   ", "?!?!", "x" * 3000, None, 42, "\x00\x01", "...")


def rss_mb() -> float:
    """Resident memory of this process now (not its peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def _call(lake: Path, item: tuple[int, str, object]) -> tuple[str, str, float]:
    n, kind, question = item
    started = time.perf_counter()
    try:
        ask(question, strategy=STRATEGIES[n % len(STRATEGIES)], lake=lake)
        outcome = "answered" if kind == "valid" else "accepted (should be refused)"
    except QuestionError:
        outcome = "refused" if kind == "malformed" else "refused (should be answered)"
    except Exception as exc:  # the benchmark counts crashes instead of stopping at the first
        outcome = f"crash: {type(exc).__name__}: {str(exc)[:120]}"
    return kind, outcome, time.perf_counter() - started


def load_run(lake: Path, questions: list[str], seed: int = 5) -> dict:
    """160 valid calls (drawn from `questions`) and 40 malformed ones, shuffled: the first 20 one at a
    time, the rest from 4 threads; before them, the first 40 valid calls serially as the baseline."""
    rng = random.Random(seed)
    items = [("valid", rng.choice(questions)) for _ in range(160)] + [
        ("malformed", rng.choice(MALFORMED)) for _ in range(40)
    ]
    rng.shuffle(items)
    numbered = [(n, kind, q) for n, (kind, q) in enumerate(items)]
    baseline = [_call(lake, item) for item in [i for i in numbered if i[1] == "valid"][:40]]  # also warms up
    first = [_call(lake, item) for item in numbered[:20]]
    after_first = rss_mb()
    started = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        rest = list(pool.map(lambda item: _call(lake, item), numbered[20:]))
    results = first + rest
    outcomes = Counter(outcome for _, outcome, _ in results)
    valid = sorted(s for _, outcome, s in results if outcome == "answered")
    serial = sorted(s for _, _, s in baseline)
    end = rss_mb()
    return {
        "calls": len(results),
        "outcomes": dict(outcomes),
        "crashes": sum(c for o, c in outcomes.items() if o.startswith("crash")),
        "wrong_outcomes": sum(c for o, c in outcomes.items() if "should be" in o),
        "p50": statistics.median(valid),
        "p95": valid[int(0.95 * (len(valid) - 1))],
        "baseline_p50": statistics.median(serial),
        "baseline_p95": serial[int(0.95 * (len(serial) - 1))],
        "wall_s": time.perf_counter() - started,
        "rss_first_mb": after_first,
        "rss_end_mb": end,
        "rss_growth": end / after_first - 1,
    }


def run() -> None:
    lake = get_settings().lake
    files = sorted((lake / "assets" / "benchmark_qa").glob("*.parquet"))
    if not files:
        print(f"skipped: no benchmark_qa in {lake} (run `make demo` first)")
        return
    questions = pl.concat([pl.read_parquet(f) for f in files]).sample(160, seed=3)["question"].to_list()
    r = load_run(lake, questions)
    print(
        f"200 calls (160 valid over {', '.join(STRATEGIES)}, 40 malformed), 4 threads after the first 20: "
        f"{r['outcomes']}"
    )
    print(f"  crashes: {r['crashes']}; wrong outcomes: {r['wrong_outcomes']}")
    print(f"  concurrent answers: p50 {r['p50']:.2f} s, p95 {r['p95']:.2f} s; 180 calls in {r['wall_s']:.0f} s wall")
    print(
        f"  baseline, same lake and run, 40 valid calls one at a time: p50 {r['baseline_p50']:.2f} s, "
        f"p95 {r['baseline_p95']:.2f} s"
    )
    print(
        f"  resident memory: {r['rss_first_mb']:.0f} MB after the first 20 calls, {r['rss_end_mb']:.0f} MB at the end "
        f"({r['rss_growth']:+.1%})"
    )
