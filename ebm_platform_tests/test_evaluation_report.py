"""Answer metrics on hand-computed examples, the summary statistics, and the evaluation assets
(evaluation_report blocked per partition by benchmark_structure, evaluation_summary's outputs)."""

import shutil

import dagster as dg
import numpy as np
import polars as pl
import pytest

from ebm_platform.benchmark import sources
from ebm_platform.benchmark.splits import make_splits
from ebm_platform.evaluation import answer_metrics as am
from ebm_platform.evaluation.report import paired_comparison, pick_questions, summarise
from ebm_platform.intervals import interval
from ebm_platform.llm.client import LLMClient


def one_hot_embed(texts: list[str]) -> np.ndarray:
    """A stand-in embedder: equal texts have cosine 1, different texts 0."""
    vocabulary: dict[str, int] = one_hot_embed.__dict__.setdefault("vocabulary", {})
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, text in enumerate(texts):
        out[i, vocabulary.setdefault(text, len(vocabulary) % 64)] = 1.0
    return out


OFFLINE = LLMClient()
ANSWER = {
    "core_answer": [{"statement": "Hip strengthening reduced pain in runners.", "citations": [1]}],
    "evidence_by_grade": [
        {
            "grade": "C",
            "statements": [
                {"statement": "Hip strengthening reduced pain in runners.", "citations": [1]},
                {"statement": "Knee bracing improved function at six weeks.", "citations": [2]},
            ],
        }
    ],
    "citations": [{"n": 1, "window_id": "d1-a"}, {"n": 2, "window_id": "d2-b"}],
}


def test_answer_statements_are_deduplicated_and_carry_their_window_ids():
    statements = am.answer_statements(ANSWER)
    assert statements == [
        am.Statement("Hip strengthening reduced pain in runners.", ("d1-a",)),
        am.Statement("Knee bracing improved function at six weeks.", ("d2-b",)),
    ]


def test_nugget_coverage_proxy_weights_vital_one_and_okay_half():
    statements = am.answer_statements(ANSWER)
    # vital: hip, strengthening, pain of its four terms are in the answer (3/4 >= 0.6) -> covered;
    # okay: none of ice, lowered, swelling, and no answer statement equals it -> not covered
    assert am.term_coverage("hip strengthening reduces pain", am.stems(statements[0].text)) == pytest.approx(3 / 4)
    name, value = am.nugget_coverage(
        ["hip strengthening reduces pain"], ["ice lowered swelling"], statements, one_hot_embed, OFFLINE
    )
    assert name == "NC_proxy" and value == pytest.approx(1.0 / 1.5)
    assert am.nugget_coverage([], [], statements, one_hot_embed, OFFLINE) is None


def test_a_nugget_is_covered_by_embedding_when_its_terms_are_not():
    statements = [am.Statement("Completely different words.", ("w",))]
    flags = am.covered_offline(
        ["Completely different words.", "unrelated phrase"],
        [s.text for s in statements],
        lambda texts: np.ones((len(texts), 4), dtype=np.float32) / 2,
    )  # cosine 1 for all
    assert flags == [True, True]
    flags = am.covered_offline(["unrelated phrase"], [s.text for s in statements], one_hot_embed)
    assert flags == [False]


def test_faithfulness_proxy_counts_statements_their_cited_window_supports():
    statements = am.answer_statements(ANSWER)
    sentences = {"d1-a": ["Hip strengthening reduced pain in runners."], "d2-b": ["The brace was well tolerated."]}
    name, value = am.faithfulness(statements, sentences, one_hot_embed, OFFLINE)
    assert name == "Faith_proxy" and value == 0.5  # the second statement's window does not say it
    assert am.faithfulness([], sentences, one_hot_embed, OFFLINE) is None


def test_llm_judges_report_under_the_papers_names(server):
    client = LLMClient(model="openai/test-model", api_base=server.base, api_key="k", max_retries=0)
    server.script = ['content:{"covered": [true, false, true]}', 'content:{"supported": [true, false]}']
    statements = am.answer_statements(ANSWER)
    name, value = am.nugget_coverage(["a", "b"], ["c"], statements, one_hot_embed, client)
    assert (name, value) == ("NC", pytest.approx((1 + 0.5) / 2.5))
    assert "1. a" in server.prompts[0] and "3. c" in server.prompts[0]
    name, value = am.faithfulness(statements, {"d1-a": ["x"]}, one_hot_embed, client)
    assert (name, value) == ("Faith", 0.5)
    assert "Cited evidence: x" in server.prompts[1] and "Cited evidence: (none)" in server.prompts[1]


def test_semantic_similarity_is_the_cosine_of_answer_and_reference():
    statements = [am.Statement("same text", ())]
    assert am.semantic_similarity(statements, "same text", one_hot_embed) == pytest.approx(1.0)
    assert am.semantic_similarity(statements, "another text", one_hot_embed) == pytest.approx(0.0)
    assert am.semantic_similarity(statements, None, one_hot_embed) is None
    assert am.semantic_similarity([], "x", one_hot_embed) is None


def test_pico_match_proxy_over_non_null_gold_fields(monkeypatch):
    monkeypatch.setattr(
        am,
        "answer_fields",
        lambda statements: {
            "P": ["recreational runners"],
            "I": ["hip abductor strengthening"],
            "C": [],
            "O": [],
            "T": [],
        },
    )
    statements = [am.Statement("Hip abductor strengthening reduced pain in recreational runners.", ())]
    gold = {"P": "adults with knee osteoarthritis", "I": "hip strengthening", "C": None, "O": "pain", "T": " "}
    # P: no term overlap, cosine 0 -> miss; I: all terms in the phrase -> match; O: no phrase, text has it -> match
    assert am.pico_match(gold, statements, one_hot_embed) == pytest.approx(2 / 3)
    assert am.pico_match({"P": None, "I": None}, statements, one_hot_embed) is None


def test_bootstrap_intervals_are_reproducible_with_a_seed():
    values = np.random.default_rng(0).random(30)
    first, second = interval(values, seed=3), interval(values, seed=3)
    assert first == second and first[0] < values.mean() < first[1]
    assert interval(values, seed=4) != first  # another seed resamples differently
    assert interval(np.array([0.7, 0.7]), seed=1) == (0.7, 0.7)
    assert all(np.isnan(interval(np.array([0.5]), seed=1)))


def _rows(values: dict[str, list[float | None]]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "question_id": f"q{i}",
                "condition": "PFP" if i < 2 else "ACL",
                "source": "generated",
                "strategy": strategy,
                "mode": "offline",
                "R@10": v,
            }
            for strategy, vs in values.items()
            for i, v in enumerate(vs)
        ]
    )


def test_pooled_token_f1_and_its_article_bootstrap_interval():
    from ebm_platform.intervals import unit_interval
    from ebm_platform.pico.spans import token_scores
    from ebm_platform.pico.training import headline_counts, pooled_macro_f1, summarise

    rng = np.random.default_rng(5)
    gold = [rng.integers(0, 4, rng.integers(20, 80)) for _ in range(40)]
    good = [np.where(rng.random(len(g)) < 0.8, g, 0) for g in gold]
    poor = [np.where(rng.random(len(g)) < 0.3, g, rng.integers(0, 4, len(g))) for g in gold]
    counts_good, counts_poor = headline_counts(gold, good), headline_counts(gold, poor)
    # the table's per-class F1 are rounded to 3 decimals
    assert pooled_macro_f1(counts_good) == pytest.approx(summarise(token_scores(gold, good))["macro_f1"], abs=5e-4)
    low, high = unit_interval(len(gold), lambda i: pooled_macro_f1(counts_good[i]))
    assert low < pooled_macro_f1(counts_good) < high < 1.0
    assert (low, high) == unit_interval(len(gold), lambda i: pooled_macro_f1(counts_good[i]))  # seeded
    low, high = unit_interval(len(gold), lambda i: pooled_macro_f1(counts_good[i]) - pooled_macro_f1(counts_poor[i]))
    assert 0 < low < high


def test_paired_against_compares_runs_on_the_questions_both_have():
    from ebm_platform.evaluation.retrieval_eval import paired_against

    first = {"q1": [1.0, 1.0, 1.0], "q2": [0.5, 1.0, 0.5], "q3": [0.0, 0.0, 0.0]}
    second = {"q1": [1.0, 1.0, 0.5], "q2": [0.0, 0.0, 0.0], "q4": [1.0, 1.0, 1.0]}
    paired = paired_against(first, second, k=10)
    assert paired["MRR"]["n"] == 2 and paired["MRR"]["difference"] == pytest.approx(0.5)
    assert (paired["MRR"]["wins"], paired["MRR"]["ties"], paired["MRR"]["losses"]) == (2, 0, 0)
    assert (paired["R@10"]["wins"], paired["R@10"]["ties"]) == (1, 1)


def test_eval_compare_pairs_two_saved_runs(tmp_path, capsys):
    import json

    from ebm_platform.cli import main

    def run(name: str, rr: list[float]) -> str:
        path = tmp_path / f"{name}.json"
        path.write_text(
            json.dumps(
                {"lake": name, "k": 10, "per_question": {"sr_rag": {f"q{i}": [1.0, 1.0, v] for i, v in enumerate(rr)}}}
            )
        )
        return str(path)

    before, after = run("before", [1.0, 0.5, 0.5, 1.0]), run("after", [1.0, 1.0, 1.0, 0.5])
    assert main(["eval", "compare", before, after, "--json"]) == 0
    mrr = json.loads(capsys.readouterr().out)["second_minus_first"]["sr_rag"]["MRR"]
    assert mrr["difference"] == pytest.approx(0.125) and (mrr["wins"], mrr["ties"], mrr["losses"]) == (2, 1, 1)
    assert main(["eval", "compare", before, after]) == 0
    assert "sr_rag" in capsys.readouterr().out
    (tmp_path / "old.json").write_text(json.dumps({"k": 10, "results": {}}))
    with pytest.raises(SystemExit, match="no per-question values"):
        main(["eval", "compare", before, str(tmp_path / "old.json")])


def test_paired_comparison_counts_wins_ties_and_losses_on_shared_questions():
    rows = _rows({"sr_rag": [1.0, 1.0, 0.0, None], "naive": [0.0, 1.0, 0.0, 1.0]})
    paired = paired_comparison(rows, seed=0).row(0, named=True)
    assert paired["strategy"] == "naive" and paired["n"] == 3  # q3 has no sr_rag value
    assert paired["difference"] == pytest.approx(1 / 3)
    assert (paired["wins"], paired["ties"], paired["losses"]) == (1, 2, 0)
    summary = summarise(rows, seed=0)
    assert summary.by_condition.filter((pl.col("group") == "PFP") & (pl.col("strategy") == "sr_rag"))["mean"][0] == 1.0
    assert summarise(rows, seed=0).long().equals(summary.long())


def test_a_capped_run_sees_every_source():
    bench = sources.frame(
        [
            sources.row(
                question_id=f"{s}-{i}",
                condition="X",
                source=s,
                question=f"q {s} {i}",
                exact_answer="a",
                split_kind="main",
            )
            for s, n in (("sr_rag_release", 6), ("generated", 1), ("pubmedqa", 1))
            for i in range(n)
        ]
    )
    picked = pick_questions(bench, 3, seed=7)
    assert sorted(picked["source"].to_list()) == ["generated", "pubmedqa", "sr_rag_release"]
    assert pick_questions(bench, 3, seed=7).equals(picked) and pick_questions(bench, 0, seed=7).height == 8


def test_splits_group_questions_across_conditions_and_by_source_article():
    rows = [
        sources.row(
            question_id=f"ei-{c}-{n}",
            condition=c,
            source="evidence_inference",
            question=f"Effect of drug {n} on outcome {n}?",
            exact_answer="x",
            split_kind="main",
            gold_window_ids=[f"doc{n // 4}-w{n}"],
        )
        for n in range(40)
        for c in ("PFP", "ACL")
    ]
    bench = sources.frame(rows)
    split = dict(make_splits(bench).select("question_id", "split").iter_rows())
    for n in range(40):
        assert split[f"ei-PFP-{n}"] == split[f"ei-ACL-{n}"]  # the same question under two conditions
        assert split[f"ei-PFP-{n}"] == split[f"ei-PFP-{n - n % 4}"]  # prompts about one article
    assert set(split.values()) == {"train", "validation", "test"}


@pytest.fixture()
def eval_lake(small_lake, tmp_path):
    root = tmp_path / "lake"
    shutil.copytree(small_lake, root)
    return root


def _materialised(result) -> set[str]:
    return {
        e.event_specific_data.materialization.asset_key.path[-1]
        + (
            f"[{e.event_specific_data.materialization.partition}]"
            if e.event_specific_data.materialization.partition
            else ""
        )
        for e in result.get_asset_materialization_events()
    }


def test_evaluation_report_runs_only_where_the_benchmark_passed_its_blocking_check(
    eval_lake, datasets_dir, monkeypatch
):
    from ebm_platform.defs.benchmark import (
        BenchmarkResource,
        benchmark_qa,
        benchmark_splits,
        benchmark_structure,
        splits_unique_across_conditions,
    )
    from ebm_platform.defs.corpus import evidence_windows, source_documents
    from ebm_platform.defs.evaluation import evaluation_report, evaluation_summary
    from ebm_platform.defs.graph import pico_extractions
    from ebm_platform.defs.resources import EvaluationResource
    from ebm_platform_tests.conftest import lake_resources

    assets = [
        source_documents,
        evidence_windows,
        pico_extractions,
        benchmark_qa,
        benchmark_structure,
        benchmark_splits,
        splits_unique_across_conditions,
        evaluation_report,
        evaluation_summary,
    ]
    resources = lake_resources(eval_lake) | {
        "benchmark": BenchmarkResource(
            datasets_dir=str(datasets_dir), sources=["sr_rag_release", "evidence_inference"]
        ),
        "evaluation": EvaluationResource(strategies="sr_rag,naive", max_questions=3),
    }
    instance = dg.DagsterInstance.ephemeral()

    def run(selection, partition=None, ok=True):
        result = dg.materialize(
            assets,
            selection=selection,
            partition_key=partition,
            resources=resources,
            instance=instance,
            raise_on_error=False,
        )
        assert result.success is ok
        return result

    for code in ("PFP", "ACL"):  # ACL has no documents here: its benchmark is the release's ACL questions
        run([source_documents, evidence_windows, benchmark_qa] if code == "ACL" else [benchmark_qa], code)
    first = run([benchmark_splits])
    check = next(
        e.asset_check_evaluation_data for e in first.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    )
    assert check.check_name == "splits_unique_across_conditions" and check.passed
    assert set(pl.read_parquet(eval_lake / "assets" / "benchmark_splits.parquet")["condition"]) == {"ACL", "PFP"}
    ranged = {"dagster/asset_partition_range_start": "ACL", "dagster/asset_partition_range_end": "AT"}
    refused = dg.materialize(
        assets, selection=[evaluation_report], tags=ranged, resources=resources, instance=instance, raise_on_error=False
    )  # one run over ACL..AT: AT's benchmark was never built
    failure = next(e for e in refused.all_events if e.event_type_value == "STEP_FAILURE")
    assert "[AT] benchmark_structure has never run" in failure.event_specific_data.error.message
    assert not (eval_lake / "assets" / "evaluation_report").exists()  # nothing written, ACL's included
    for code in ("ACL", "PFP"):
        result = run([evaluation_report], code)
        assert f"evaluation_report[{code}]" in _materialised(result)
    report = pl.read_parquet(eval_lake / "assets" / "evaluation_report" / "PFP.parquet")
    run([source_documents, evidence_windows, benchmark_qa], "AT")
    alone = pl.read_parquet(eval_lake / "assets" / "evaluation_report" / "ACL.parquet")
    both = dg.materialize(assets, selection=[evaluation_report], tags=ranged, resources=resources, instance=instance)
    assert _materialised(both) == {"evaluation_report[ACL]", "evaluation_report[AT]"}  # one run, a file each
    assert (
        pl.read_parquet(eval_lake / "assets" / "evaluation_report" / "ACL.parquet")
        .drop("seconds")
        .equals(alone.drop("seconds"))
    )
    assert set(pl.read_parquet(eval_lake / "assets" / "evaluation_report" / "AT.parquet")["condition"]) <= {"AT"}
    assert report.height == 6 and set(report["strategy"]) == {"sr_rag", "naive"}
    meta = result.get_asset_materialization_events()[0].event_specific_data.materialization.metadata
    assert meta["dagster/row_count"].value == 6  # the IO manager's operator metadata
    assert "NC_proxy" in {c.name for c in meta["dagster/column_schema"].schema.columns}
    assert report["NC"].is_null().all() and report["NC_proxy"].is_not_null().any()  # offline: proxies only

    # PFP's benchmark now breaks its structure rules: its check fails, its report no longer runs,
    # ACL's still does, and the summary leaves PFP's older report out
    def broken(*args, **kwargs):
        return sources.frame(
            [
                sources.row(
                    question_id="dup",
                    condition="PFP",
                    source="evidence_inference",
                    question=f"Question {n}?",
                    exact_answer="a",
                    split_kind="main",
                    gold_window_ids=["missing-window"],
                )
                for n in range(2)
            ]
        )

    monkeypatch.setattr("ebm_platform.defs.benchmark.evidence_inference_rows", broken)
    last_good = pl.read_parquet(eval_lake / "assets" / "benchmark_qa" / "PFP.parquet")
    failed = run([benchmark_qa], "PFP", ok=False)
    assert pl.read_parquet(eval_lake / "assets" / "benchmark_qa" / "PFP.parquet").equals(last_good)  # not replaced
    checks = [
        e.asset_check_evaluation_data for e in failed.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert any(c.check_name == "benchmark_structure" and not c.passed for c in checks)
    blocked = run([evaluation_report], "PFP", ok=False)
    failure = next(e for e in blocked.all_events if e.event_type_value == "STEP_FAILURE")
    assert "benchmark_structure's latest evaluation is FAILED" in failure.event_specific_data.error.message
    assert "evaluation_report[ACL]" in _materialised(run([evaluation_report], "ACL"))
    resplit = run([benchmark_splits])  # a path with no check in its run: the splits still leave PFP out
    meta = resplit.get_asset_materialization_events()[0].event_specific_data.materialization.metadata
    assert list(meta["conditions_blocked"].value) == ["PFP"]
    assert set(pl.read_parquet(eval_lake / "assets" / "benchmark_splits.parquet")["condition"]) == {"ACL", "AT"}

    summary = run([evaluation_summary])
    meta = summary.get_asset_materialization_events()[0].event_specific_data.materialization.metadata
    assert list(meta["conditions_blocked"].value) == ["PFP"]
    ours, paper = meta["summary"].value.split("## The paper's Table 2")
    assert "NC_proxy" in ours and "Faith_proxy" in ours and "| NC |" not in ours and "Faith |" not in ours
    assert "| NC | Faith |" in paper  # the paper's own figures keep the paper's names
    reports = eval_lake / "reports"
    assert (reports / "evaluation.html").read_text().count("<table>") >= 3
    assert (reports / "evaluation_bars.png").stat().st_size > 1000
    table = pl.read_parquet(eval_lake / "assets" / "evaluation_summary.parquet")
    assert set(table["scope"]) == {"overall", "condition", "source"} and set(table["group"]) >= {"ACL"}
    assert "PFP" not in set(table["group"])


def test_automation_never_requests_the_report_of_a_partition_whose_benchmark_failed(
    eval_lake, datasets_dir, monkeypatch
):
    """The sensor and on_cron path: automation over the real definitions, tick by tick. benchmark_qa
    runs for real (its checks too); every other asset stands in as a runless materialisation (with
    its unpartitioned checks passed). When PFP's benchmark fails its blocking check, the globals
    refresh and ACL's report is requested again, PFP's is not."""
    from datetime import datetime, timedelta

    from ebm_platform.definitions import defs
    from ebm_platform.defs.benchmark import benchmark_qa, benchmark_structure
    from ebm_platform.defs.corpus import evidence_windows, source_documents
    from ebm_platform.defs.graph import pico_extractions
    from ebm_platform.defs.resources import BenchmarkResource
    from ebm_platform_tests.conftest import lake_resources

    graph, instance = defs.resolve_asset_graph(), dg.DagsterInstance.ephemeral()
    resources = lake_resources(eval_lake) | {
        "benchmark": BenchmarkResource(datasets_dir=str(datasets_dir), sources=["sr_rag_release", "evidence_inference"])
    }

    def bench(code: str) -> bool:
        upstream = [source_documents, evidence_windows] if code == "ACL" else []  # ACL has no parquet in the lake
        return dg.materialize(
            [source_documents, evidence_windows, pico_extractions, benchmark_qa, benchmark_structure],
            selection=[*upstream, benchmark_qa, benchmark_structure],
            partition_key=code,
            resources=resources,
            instance=instance,
            raise_on_error=False,
        ).success

    def runless(key: dg.AssetKey, partition: str | None) -> None:
        instance.report_runless_asset_event(dg.AssetMaterialization(key, partition=partition))
        if partition is None:
            for check in graph.get_check_keys_for_assets({key}):
                instance.report_runless_asset_event(dg.AssetCheckEvaluation(key, check.name, True))

    for key in graph.toposorted_asset_keys:
        if key.to_user_string() in ("landing_files", "landing_imports"):
            continue
        for code in ("PFP", "ACL") if graph.get(key).is_partitioned else (None,):
            assert bench(code) if key == benchmark_qa.key else runless(key, code) is None

    def settle(cursor, start: datetime, ticks: int):
        requested = set()
        for tick in range(ticks):
            result = dg.evaluate_automation_conditions(
                defs, instance, evaluation_time=start + timedelta(minutes=tick), cursor=cursor
            )
            cursor = result.cursor
            for partition in [p for r in result.results for p in r.true_subset.expensively_compute_asset_partitions()]:
                requested.add((partition.asset_key.to_user_string(), partition.partition_key))
                runless(partition.asset_key, partition.partition_key)
        return requested, cursor

    idle, cursor = settle(None, datetime(2026, 11, 24, 12), 2)
    assert idle == set()
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
    assert not bench("PFP")
    requested, _ = settle(cursor, datetime(2026, 11, 24, 13), 10)
    assert {"benchmark_splits", "betr_parameters"} <= {a for a, p in requested if p is None}
    assert ("evaluation_report", "ACL") in requested and ("evaluation_report", "PFP") not in requested
    assert ("evaluation_summary", None) in requested


def test_the_demo_evaluates_each_stretch_of_unblocked_partitions_in_one_run(tmp_path):
    from ebm_platform.runs import evaluation_requests, unblocked_ranges

    codes = ["A", "B", "C", "D", "E", "F"]
    assert unblocked_ranges(codes, set()) == [codes]
    assert unblocked_ranges(codes, {"A", "C", "D"}) == [["B"], ["E", "F"]]
    assert unblocked_ranges(codes, set(codes)) == []
    assert evaluation_requests(codes, ["A", "C", "D"], 1, tmp_path) == [["B"], ["E", "F"]]


def test_with_several_workers_the_demo_evaluates_each_unblocked_partition_largest_first(tmp_path):
    """Runs in parallel worker processes: one per partition, the largest landing folder first."""
    from ebm_platform.runs import evaluation_requests

    for code, size in {"B": 10, "E": 30, "F": 20}.items():
        (tmp_path / code).mkdir()
        (tmp_path / code / "doc.json").write_text("x" * size)
    assert evaluation_requests(["A", "B", "C", "D", "E", "F"], ["A", "C", "D"], 2, tmp_path) == [["E"], ["F"], ["B"]]


def test_full_strategies_answer_every_other_gold_question_of_a_capped_run():
    from ebm_platform.defs.resources import EvaluationResource
    from ebm_platform.evaluation.report import gold_rest, pick_questions

    bench = sources.frame(
        [
            sources.row(
                question_id=f"q{n}",
                condition="PFP",
                source="evidence_inference",
                question=f"Question {n}?",
                gold_window_ids=[f"w{n}"] if n % 3 else [],
            )
            for n in range(9)
        ]
    )
    picked = pick_questions(bench, 2, 7)
    rest = gold_rest(bench, picked)
    assert set(rest["question_id"]) == {f"q{n}" for n in range(9) if n % 3} - set(picked["question_id"])
    assert gold_rest(bench.head(0), picked).height == 0
    assert EvaluationResource(
        strategies="all", max_questions=2, full_strategies="sr_rag,naive"
    ).full_strategy_names() == ["sr_rag", "naive"]
    assert EvaluationResource(max_questions=0, full_strategies="sr_rag").full_strategy_names() == []  # nothing capped


def test_a_condition_without_evidence_is_answered_by_the_full_strategies_only_and_the_summary_says_so():
    """Seven of the demo's conditions hold no window: there every system answered from other conditions'
    evidence (68 of the six systems' 84 answers there scored NC_proxy 0, c946f89's demo); sr_rag and naive still
    answer their questions, the four others do not, and evaluation.md names those conditions."""
    from ebm_platform.evaluation.report import describe, strategies_for

    six = ["sr_rag", "naive", "med_r2", "meta_rag", "claims", "kg_refine"]
    assert strategies_for(six, ["sr_rag", "naive"], windows=515) == six
    assert strategies_for(six, ["sr_rag", "naive"], windows=0) == ["sr_rag", "naive"]
    assert strategies_for(six, [], windows=0) == six  # uncapped runs (no full strategies) answer with every one
    rows = pl.DataFrame(
        {
            "question_id": ["a", "a", "a", "b", "b"],
            "condition": ["PFP", "PFP", "PFP", "GL-GEN", "GL-GEN"],
            "strategy": ["sr_rag", "naive", "claims", "sr_rag", "naive"],
            "mode": ["offline"] * 5,
        }
    )
    (note,) = [n for n in describe(rows, ["PFP", "GL-GEN"]) if n.startswith("Conditions whose corpus")]
    assert note.endswith(": GL-GEN.")


def test_a_prompt_whose_evidence_trained_the_verdict_model_has_no_gold_verdict(datasets_dir):
    """The platform benchmark admits Evidence Inference train prompts; their verdicts are not scored."""
    from ebm_platform.benchmark.evidence_inference import prompts
    from ebm_platform.evaluation.report import gold_verdict, verdict_training_questions

    trained = verdict_training_questions(datasets_dir)
    row = {
        "source": "evidence_inference",
        "question_id": f"ei-PFP-{min(trained)}",
        "exact_answer": "no significant difference",
    }
    assert len(trained) > 1000 and gold_verdict(row, trained) is None
    held_out = prompts(datasets_dir, "validation")["prompt_id"][0]
    assert held_out not in trained
    assert gold_verdict({**row, "question_id": f"ei-PFP-{held_out}"}, trained) == "no significant difference"
    assert gold_verdict({**row, "source": "pubmedqa", "exact_answer": "maybe"}, trained) == "maybe"


def test_the_means_table_holds_strategies_that_lack_a_metric():
    """A strategy with no verdict accuracy (its questions' verdicts are not scored) beside one with
    it: the asset's table still builds (the demo failed here once), the missing mean is empty."""
    import polars as pl

    from ebm_platform.defs.evaluation import _means
    from ebm_platform.evaluation.report import summary_table

    rows = pl.DataFrame(
        {
            "strategy": ["sr_rag", "sr_rag", "med_r2"],
            "SS": [0.5, 0.7, 0.6],
            "verdict_accuracy": [1.0, 0.0, None],
        }
    )
    table = _means(summary_table(rows, None, 7))
    by_strategy = {r.data["strategy"]: r.data for r in table.value.records}
    assert by_strategy["med_r2"]["verdict_accuracy"] is None and by_strategy["sr_rag"]["verdict_accuracy"] == 0.5


def test_every_command_prints_its_help():
    """`ebm eval --help` printed a stack trace: a help string's "95% intervals" read as a format ("% i")."""
    import argparse

    from ebm_platform.cli import build_parser

    parsers, helps = [build_parser()], 0
    while parsers:
        parser = parsers.pop()
        assert parser.format_help()
        helps += 1
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(action.choices.values())
    assert helps > 20
