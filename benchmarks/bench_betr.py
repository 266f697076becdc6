"""BETR fit time: the demo benchmark's candidate pools (run `make demo` first; skipped otherwise)
and a synthetic training set of the paper's size (983 queries), both in this run; the
L-BFGS-B solve of the same objective is the baseline. Then BETR on the paper's Semantic-only
score: the demo's pools scored by the hand-set scorer instead of the learned one, BETR fitted on
their train split (tau on validation) and Table 1's rankers on their test split, beside the same
run's rows on the learned score that `betr_report` shows."""

from __future__ import annotations

import time

import polars as pl

from ebm_platform.betr.fit import GRADES, build_pairs, fit, select_tau, simulate
from ebm_platform.evaluation.betr_metrics import betr, ceiling, evaluate, heuristic, semantic, tune_heuristic
from ebm_platform.retrieval.lexical import LEXICAL_WEIGHT
from ebm_platform.settings import get_settings

PAPER_U = {"A": 0.0, "B": -0.1287, "C": -0.2575, "D": -0.3863, "E": -0.5151}


def _report(label: str, pools: pl.DataFrame) -> None:
    t0 = time.perf_counter()
    pairs = build_pairs(pools)
    t_pairs = time.perf_counter() - t0
    if not len(pairs):
        print(f"{label}: no pairs")
        return
    result = fit(pairs, tau=1.0)
    print(
        f"{label}: {pairs.n_queries} queries, {len(pairs)} pairs; pairs {t_pairs:.2f} s; "
        f"Adam 80 epochs + L-BFGS-B check {result.seconds:.2f} s; objective gap {result.gap:.2e}; "
        f"a = {result.a:.4f}, u_E = {result.u['E']:.4f}"
    )


def _table1(label: str, pools: pl.DataFrame) -> None:
    """BETR fitted on `pools`' train split (tau on validation), then Semantic-only, Heuristic (c tuned on
    validation), BETR and the ideal order on the test split (AvgGrade / HGSR / SA-NDCG / PrefAcc at K = 12)."""
    train, validation, test = (pools.filter(pl.col("split") == split) for split in ("train", "validation", "test"))
    fitted, _ = select_tau(build_pairs(train), build_pairs(validation))
    c = tune_heuristic(validation)
    u = ", ".join(f"{g} {fitted.u[g]:.3f}" for g in GRADES)
    print(f"{label}: a = {fitted.a:.3f}, u = {u}, tau = {fitted.tau}; Heuristic c = {c}")
    rankers = {"Semantic-only": semantic, "Heuristic": heuristic(c), "BETR": betr(fitted.a, fitted.u)}
    rows = {name: evaluate(test, ranker) for name, ranker in rankers.items()} | {"ideal order": ceiling(test)}
    for name, m in rows.items():
        print(
            f"  {name:<14} AvgGrade {m['AvgGrade']:.3f}  HGSR {m['HGSR']:.3f}  SA-NDCG {m['SA-NDCG']:.3f}  "
            f"PrefAcc {m['PrefAcc']:.3f}  ({m['queries']} test queries)"
        )


def run() -> None:
    lake = get_settings().lake
    path = lake / "assets" / "candidate_pools.parquet"
    if not path.exists():
        print(f"demo benchmark: {path} missing (run `make demo` first)")
    else:
        pools = pl.read_parquet(path)
        _report("demo benchmark (train split)", pools.filter(pl.col("split") == "train"))
        hand_set = pl.read_parquet(lake / "assets" / "fused_candidates.parquet").select(
            "question_id", "window_id", s_hand=pl.col("cosine") + LEXICAL_WEIGHT * pl.col("coverage")
        )
        _table1("Table 1 on the learned score s (as betr_report)", pools)
        _table1(
            f"Table 1 on the hand-set score s = cosine + {LEXICAL_WEIGHT} x coverage (the paper's Semantic-only)",
            pools.join(hand_set, on=["question_id", "window_id"]).with_columns(s=pl.col("s_hand")),
        )
    _report("synthetic, paper size (983 queries, 24 candidates, 3 gold)", simulate(983, 1.0348, PAPER_U, seed=11))
