"""BETR fit time: the demo benchmark's candidate pools (run `make demo` first; skipped otherwise)
and a synthetic training set of the paper's size (983 queries), both in this run; the
L-BFGS-B solve of the same objective is the baseline."""

from __future__ import annotations

import time

import polars as pl

from ebm_platform.betr.fit import build_pairs, fit, simulate
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


def run() -> None:
    path = get_settings().lake / "assets" / "candidate_pools.parquet"
    if path.exists():
        pools = pl.read_parquet(path)
        _report("demo benchmark (train split)", pools.filter(pl.col("split") == "train"))
    else:
        print(f"demo benchmark: {path} missing (run `make demo` first)")
    _report("synthetic, paper size (983 queries, 24 candidates, 3 gold)", simulate(983, 1.0348, PAPER_U, seed=11))
