"""BETR: parameter recovery, determinism, metric arithmetic and the parameter check."""

import math

import numpy as np
import polars as pl
import pytest

from ebm_platform.betr.fit import build_pairs, fit, objective_np, select_tau, simulate
from ebm_platform.betr.model import BetrParameters
from ebm_platform.defs.betr import parameter_problems
from ebm_platform.evaluation.betr_metrics import betr, ceiling, evaluate, heuristic, query_metrics, semantic

TRUE_U = {"A": 0.0, "B": -0.3, "C": -0.6, "D": -0.9, "E": -1.2}


def test_parameters_are_recovered_from_simulated_pairs():
    """Pools simulated from a = 1, u = 0/-0.3/-0.6/-0.9/-1.2; with a weak prior (tau = 10) the fit
    recovers a within 0.06 and every u within 0.1 (the paper's tau = 1 shrinks u towards 0 by design)."""
    pairs = build_pairs(simulate(600, 1.0, TRUE_U, seed=3))
    result = fit(pairs, tau=10.0)
    assert abs(result.a - 1.0) < 0.06
    for grade, value in TRUE_U.items():
        assert abs(result.u[grade] - value) < 0.1, (grade, result.u[grade])
    assert result.gap < 1e-4  # Adam (80 epochs) agrees with L-BFGS-B
    strong_prior = fit(pairs, tau=0.1)
    assert abs(strong_prior.u["E"]) < abs(result.u["E"]) / 2


def test_fit_is_invariant_to_pair_order_and_seeded():
    pools = simulate(200, 1.0, TRUE_U, seed=5)
    shuffled = pools.sample(fraction=1.0, shuffle=True, seed=9)
    a, b = build_pairs(pools), build_pairs(shuffled)
    assert np.array_equal(a.delta_s, b.delta_s) and np.array_equal(a.grade_pos, b.grade_pos)
    first, second = fit(a, 1.0), fit(b, 1.0)
    assert first.u == second.u and first.a == second.a
    other_seed = build_pairs(simulate(200, 1.0, TRUE_U, seed=5), negatives=3, seed=99)
    assert len(other_seed) < len(a)


def test_objective_is_query_normalised():
    from ebm_platform.betr.fit import Pairs

    # query 0: one pair that is certainly right; query 1: nine coin-flip pairs
    pairs = Pairs(
        query=np.array([0] + [1] * 9),
        delta_s=np.array([50.0] + [0.0] * 9),
        grade_pos=np.zeros(10, dtype=int),
        grade_neg=np.zeros(10, dtype=int),
        n_queries=2,
    )
    assert objective_np(np.zeros(5), pairs, tau=1.0) == pytest.approx(math.log(0.5) / 2)  # not 0.9 * log(0.5)


def test_tau_is_selected_on_validation():
    train = build_pairs(simulate(300, 1.0, TRUE_U, seed=7))
    validation = build_pairs(simulate(100, 1.0, TRUE_U, seed=8))
    best, scores = select_tau(train, validation, grid=(0.1, 10.0))
    assert best.tau == max(scores, key=scores.get) == 10.0


def test_metrics_on_a_hand_checked_pool():
    s = np.array([0.9, 0.8, 0.7, 0.1])
    grades = ["C", "A", "E", "B"]
    gold = np.array([1.0, 0.0, 0.0, 1.0])
    m = query_metrics(s, grades, gold, semantic, k=2)
    assert m["AvgGrade"] == 3 and m["HGSR"] == 0.0 and m["PrefAcc"] == pytest.approx(0.5)
    boosted = query_metrics(s, grades, gold, betr(1.0, {"A": 0, "B": 0, "C": -1, "D": -1, "E": -1}), k=2)
    assert boosted["HGSR"] == 1.0  # B's gold window now reaches the top 2
    assert query_metrics(s, grades, gold, heuristic(0.0), k=4)["SA-NDCG"] == pytest.approx(
        query_metrics(s, grades, gold, semantic, k=4)["SA-NDCG"]
    )


def test_the_ceiling_orders_gold_first_and_shows_when_grade_cannot_help():
    """The ideal order puts every gold window first and higher grades first among them: on a pool whose
    gold windows all fit in the top K already, no reranking that keeps them there changes HGSR (the demo's
    test split on 2026-12-03: 14 of 131 questions with an A or B gold window, HGSR 0.048 both ways)."""
    pools = pl.DataFrame(
        {
            "question_id": ["q1"] * 4 + ["q2"] * 3,
            "s": [0.9, 0.8, 0.7, 0.1, 0.9, 0.5, 0.4],
            "grade": ["C", "A", "E", "B", "C", "B", "A"],
            "gold": [True, False, False, True, True, True, False],
        }
    )
    top = ceiling(pools, k=2)
    assert top["HGSR"] == pytest.approx((0.5 + 0.5) / 2) and top["PrefAcc"] == 1.0 and top["SA-NDCG"] == 1.0
    assert evaluate(pools, semantic, k=2)["HGSR"] == pytest.approx((0.0 + 0.5) / 2)  # q1's B is fourth
    fits = pools.filter(pl.col("question_id") == "q2")  # both gold windows already in the top 2
    assert ceiling(fits, k=2)["HGSR"] == evaluate(fits, semantic, k=2)["HGSR"]
    # among the gold windows a ranker may drop C's from the top K to raise HGSR: that costs SA-NDCG
    boosted = evaluate(pools, betr(1.0, {"A": 0, "B": 0, "C": -1, "D": -1, "E": -1}), k=2)
    assert boosted["HGSR"] > top["HGSR"] and boosted["SA-NDCG"] < top["SA-NDCG"]


@pytest.mark.parametrize(
    "params, problem",
    [
        (BetrParameters(1.0, {"A": 0, "B": -0.1, "C": 0.2, "D": -0.3, "E": -0.4}), "monotone"),
        (BetrParameters(float("nan"), {"A": 0, "B": 0, "C": 0, "D": 0, "E": 0}), "non-finite"),
        (BetrParameters(0.0, {"A": 0, "B": 0, "C": 0, "D": 0, "E": 0}), "not positive"),
    ],
)
def test_unsound_parameters_are_rejected(params, problem):
    assert any(problem in p for p in parameter_problems(params))
    assert parameter_problems(BetrParameters(1.03, {"A": 0, "B": -0.13, "C": -0.26, "D": -0.39, "E": -0.52})) == []
