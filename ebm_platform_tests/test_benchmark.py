"""Benchmark sources, blocking checks, splits and review decisions."""

import json
import re

import dagster as dg
import polars as pl
import pytest

from ebm_platform.benchmark import sources
from ebm_platform.benchmark.quality import (
    drop_near_duplicates,
    near_duplicate_pairs,
    quality_rules,
    structural_rules,
    without_boilerplate,
)
from ebm_platform.benchmark.review import discarded, export_sheet, latest, sheet_path, store_path
from ebm_platform.benchmark.splits import make_splits
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
from ebm_platform.defs.graph import pico_extractions
from ebm_platform.defs.index import window_index
from ebm_platform.index.embeddings import embed
from ebm_platform.settings import DEFAULT_CATALOGUE
from ebm_platform_tests.conftest import lake_resources

ASSETS = [
    source_documents,
    evidence_windows,
    window_index,
    benchmark_qa,
    benchmark_structure,
    benchmark_quality_signals,
    benchmark_splits,
    pico_extractions,  # last: the slices below select the benchmark's steps
]


def test_release_counts_per_code_equal_the_summary(datasets_dir):
    catalogue = load_catalogue(DEFAULT_CATALOGUE)
    bench = sources.release_rows(datasets_dir, catalogue)
    summary = json.loads((datasets_dir / "sr_rag_release" / "benchmark" / "summary_benchmark_full.json").read_text())
    expected = {catalogue.canonical(code): v["youtu_questions"] for code, v in summary["per_code"].items()}
    assert dict(bench.group_by("condition").len().iter_rows()) == expected
    assert bench.height == 1637 and expected["ACL"] == 46 and expected["GL-GEN"] == 92 and expected["GL-SP"] == 11
    assert set(expected) == set(catalogue.codes)
    assert bench["question_id"].n_unique() == 1637 and (bench["split_kind"] == "main").all()
    assert bench.filter(pl.col("question_id") == "srrag-0001")["nuggets_vital"][0].len() == 2


def test_quality_rules_find_boilerplate_duplicates_and_copies():
    rows = [
        sources.row(
            question_id="a",
            condition="X",
            source="generated",
            question="Does hip exercise reduce pain?",
            exact_answer="No specific values or timepoints are reported.",
            split_kind="main",
            gold_window_ids=["w1"],
            gold_i="hip exercise",
        ),
        sources.row(
            question_id="b",
            condition="X",
            source="generated",
            question="Does hip exercise reduce pain?",
            exact_answer="Yes.",
            split_kind="main",
            gold_window_ids=["w2"],
        ),
        sources.row(
            question_id="c",
            condition="X",
            source="generated",
            question="the quick brown fox jumps over the lazy dog again and again today now ok",
            exact_answer="x",
            split_kind="main",
            gold_window_ids=["w1"],
        ),
    ]
    bench = sources.frame(rows)
    text = {"w1": "so the quick brown fox jumps over the lazy dog again and again today now ok end", "w2": "y"}
    structural = {r.name: r for r in structural_rules(bench, {"w1", "w2"})}
    assert all(r.passed for r in structural.values())
    warn = {r.name: r for r in quality_rules(bench, text, embed)}
    assert warn["boilerplate_ground_truth"].metadata["boilerplate_answers"] == 1
    assert warn["near_duplicate_questions"].metadata["pairs"] == 1
    assert warn["no_verbatim_copy"].failing[0]["question_id"] == "c"
    assert not warn["picot_completeness"].passed  # 1 of 15 fields present


def test_the_quality_rules_flag_generated_questions_whose_fields_repeat_or_are_malformed():
    """`question_fields_sound` (WARN): a generated question whose population repeats its outcome, or whose field
    opens with a pronoun, cites a source or runs across a table's cells, is listed; a dataset's own prompt is as
    published."""

    def question(qid: str, source: str = "generated", **fields: str) -> dict:
        return sources.row(
            question_id=qid,
            condition="X",
            source=source,
            question=f"Question {qid}?",
            exact_answer="x",
            split_kind="main",
            gold_window_ids=["w1"],
            **fields,
        )

    bench = sources.frame(
        [
            question("pain-in-pain", gold_i="coffee", gold_o="pain", gold_p="pain"),
            question("there", gold_i="risedronate", gold_o="concomitant analgesics", gold_p="There"),
            question("pipe", gold_i="rescue medication |", gold_o="rescue medication consumed"),
            question("cited", gold_i="PRP", gold_o="VAS", gold_p="Kon et al19"),
            question("sound", gold_i="exercise", gold_o="pain", gold_p="patients with chronic low back pain"),
            question("people", gold_i="exercise", gold_o="pain", gold_p="patients"),
            question("prompt", "evidence_inference", gold_i="coffee", gold_o="pain", gold_p="pain"),
        ]
    )
    rule = {r.name: r for r in quality_rules(bench, {"w1": "x"}, embed)}["question_fields_sound"]
    assert not rule.passed and rule.severity == "WARN"
    assert [row["question_id"] for row in rule.failing] == ["pain-in-pain", "there", "pipe", "cited"]
    assert rule.metadata == {"unsound": 4, "of": 6}


def test_release_answers_lose_the_template_clause_not_their_findings():
    assert without_boilerplate(
        "Taping reduced pain at 6 weeks (p = 0.02), but no specific timepoints or numerical values are reported. "
        "No specific group sizes were provided in the evidence."
    ) == ("Taping reduced pain at 6 weeks (p = 0.02).")
    assert (
        without_boilerplate(
            "Outcomes are comparable, with no specific numerical differences between the grafts provided in the evidence."
        )
        == "Outcomes are comparable."
    )
    assert (
        without_boilerplate("However, no specific protocols are reported, and no graded evidence compares the two.")
        == "No graded evidence compares the two."
    )
    assert without_boilerplate("Exercise reduced pain.") == "Exercise reduced pain."


def test_near_duplicates_ask_about_one_outcome_and_the_one_with_gold_stays():
    """Two prompts of one trial that differ only in their outcome are two questions; a release question
    (no outcome, no gold) that repeats a generated one goes, the generated one with its gold stays."""
    question = "What is the effect of high velocity low amplitude manipulation compared with placebo on {}?"
    rows = [
        sources.row(
            question_id="srrag-1",
            condition="LBP",
            source="sr_rag_release",
            question=question.format("pain"),
            exact_answer="x",
            split_kind="main",
        ),
        *(
            sources.row(
                question_id=f"ei-{outcome}",
                condition="LBP",
                source="evidence_inference",
                question=question.format(outcome),
                exact_answer="x",
                split_kind="main",
                gold_window_ids=["w1"],
                gold_o=outcome,
            )
            for outcome in ("pain", "pain intensity")
        ),
    ]
    bench = sources.frame(rows)
    pairs = near_duplicate_pairs(bench, embed)
    assert {(p["a"], p["b"]) for p in pairs} == {("srrag-1", "ei-pain"), ("srrag-1", "ei-pain intensity")}
    kept, twins = drop_near_duplicates(bench, embed)
    assert kept["question_id"].to_list() == ["ei-pain", "ei-pain intensity"] and len(twins) == 2
    assert {r.name: r for r in quality_rules(kept, {}, embed)}["near_duplicate_questions"].passed
    repeated = sources.frame([rows[0], rows[0]])  # one id twice: left for unique_ids (ERROR) to block
    assert drop_near_duplicates(repeated, embed)[0].height == 2
    copied = sources.frame([{**rows[1], "question": "so the quick brown fox jumps over the lazy dog again and again"}])
    window = {"w1": "so the quick brown fox jumps over the lazy dog again and again today"}
    assert {r.name: r for r in quality_rules(copied, window, embed)}["no_verbatim_copy"].passed  # the dataset's own


def test_splits_are_query_grouped_stratified_and_deterministic():
    rows = [
        sources.row(
            question_id=f"q{i}",
            condition="A" if i % 2 else "B",
            source="generated",
            question=f"question {i // 2}" if i < 10 else f"question {i}",
            exact_answer="x",
            split_kind="main",
        )
        for i in range(100)
    ]
    bench = sources.frame(rows)
    first, second = make_splits(bench), make_splits(bench)
    assert first.equals(second)
    joined = first.join(bench.select("question_id", "question"), on="question_id")
    assert joined.group_by("question").agg(pl.col("split").n_unique()).filter(pl.col("split") > 1).height == 0
    for _, stratum in first.group_by("condition"):
        share = stratum.group_by("split").len().to_dict(as_series=False)
        counts = dict(zip(share["split"], share["len"]))
        assert abs(counts["train"] / stratum.height - 0.6) < 0.08


def test_splits_give_small_strata_their_test_share():
    """30 strata of one or two articles each: a per-stratum cut would put none of them in test."""
    rows = [
        sources.row(
            question_id=f"{condition}-{n}",
            condition=condition,
            source="generated",
            question=f"question {condition} {n}",
            exact_answer="x",
            split_kind="main",
            seed_window_id=f"doc{condition}{n}-w1",
        )
        for condition in (f"C{k}" for k in range(30))
        for n in range(1 + int(condition[1:]) % 2)
    ]
    counts = make_splits(sources.frame(rows)).group_by("split").len()
    share = dict(zip(counts["split"], counts["len"]))
    assert sum(share.values()) == 45
    assert (share["train"], share["validation"], share["test"]) == (27, 9, 9)


def test_splits_count_questions_not_groups():
    """One document with 30 questions beside 20 single-question documents: the split shares are of questions."""
    rows = [
        sources.row(
            question_id=f"q{n}",
            condition="LBP",
            source="generated",
            question=f"question {n}",
            exact_answer="x",
            split_kind="main",
            seed_window_id=f"guideline-w{n}" if n < 30 else f"doc{n}-w1",
        )
        for n in range(50)
    ]
    split = make_splits(sources.frame(rows))
    assert split.filter(pl.col("question_id").is_in([f"q{n}" for n in range(30)]))["split"].n_unique() == 1
    counts = dict(split.group_by("split").len().iter_rows())
    assert (counts["train"], counts["validation"], counts["test"]) == (30, 10, 10)


def test_splits_stay_put_when_other_questions_change():
    """A question reworded (a new id, the same article) and another dropped move no other question: the groups
    are placed by their article's hash, not dealt in an order every change shifts (15 changed questions once
    moved 1,038 of 2,251)."""

    def bench(changed: bool) -> pl.DataFrame:
        rows = [
            sources.row(
                question_id=f"q{n}x" if changed and n == 7 else f"q{n}",
                condition=("LBP", "NP", "FS")[n % 3],
                source="generated",
                question=f"question {n}{' reworded' if changed and n == 7 else ''}",
                exact_answer="x",
                split_kind="main",
                seed_window_id=f"doc{n // 2}-w{n}",
            )
            for n in range(240)
            if not (changed and n == 11)
        ]
        return sources.frame(rows)

    before = dict(make_splits(bench(False)).select("question_id", "split").iter_rows())
    after = dict(make_splits(bench(True)).select("question_id", "split").iter_rows())
    assert after["q7x"] == before["q7"]  # its article's place
    moved = [q for q in after if q in before and after[q] != before[q]]
    assert len(moved) <= 2, moved  # at most a group pushed across a quota's edge


def _decide(path, decisions: dict[str, str]) -> None:
    """A reviewer edits the sheet: sets `decision` on the given question ids, saves in place."""
    sheet = pl.read_csv(path, infer_schema_length=0)
    column = pl.col("decision")
    for question_id, decision in decisions.items():
        column = pl.when(pl.col("question_id") == question_id).then(pl.lit(decision)).otherwise(column)
    sheet.with_columns(column.alias("decision")).write_csv(path)


def test_review_decisions_survive_re_export_and_a_discard_never_returns(tmp_path):
    bench = sources.frame(
        [
            sources.row(
                question_id=q, condition="X", source="generated", question=q, exact_answer="a", split_kind="main"
            )
            for q in ("q1", "q2", "q3")
        ]
    )
    assert export_sheet(tmp_path, bench) == 3
    _decide(sheet_path(tmp_path), {"q1": "keep", "q2": "discard"})
    assert discarded(tmp_path) == {"q2"}
    filtered = bench.filter(pl.col("question_id") != "q2")  # what the next materialisation keeps
    assert export_sheet(tmp_path, filtered) == 3  # the discarded question stays listed
    sheet = dict(pl.read_csv(sheet_path(tmp_path), infer_schema_length=0).select("question_id", "decision").iter_rows())
    assert sheet == {"q1": "keep", "q2": "discard", "q3": None}
    assert discarded(tmp_path) == {"q2"}
    sheet_path(tmp_path).unlink()  # even without the sheet the store remembers
    assert discarded(tmp_path) == {"q2"}
    export_sheet(tmp_path, filtered)
    _decide(sheet_path(tmp_path), {"q2": "keep"})  # reinstated explicitly
    assert discarded(tmp_path) == set()
    records = [line for line in store_path(tmp_path).read_text().splitlines() if line]
    assert [r.split('"decision": ')[1][:9] for r in records] == ['"keep", "', '"discard"', '"keep", "']


def test_review_sheet_with_a_bad_decision_is_refused_and_the_store_kept(tmp_path):
    bench = sources.frame(
        [
            sources.row(
                question_id="q1", condition="X", source="generated", question="q1", exact_answer="a", split_kind="main"
            )
        ]
    )
    export_sheet(tmp_path, bench)
    _decide(sheet_path(tmp_path), {"q1": "discard"})
    assert discarded(tmp_path) == {"q1"}
    before = store_path(tmp_path).read_bytes()
    _decide(sheet_path(tmp_path), {"q1": "maybe"})
    with pytest.raises(ValueError, match="keep, discard or empty"):
        discarded(tmp_path)
    assert store_path(tmp_path).read_bytes() == before


@pytest.fixture(scope="module")
def bench_lake(tmp_path_factory, datasets_dir):
    root = tmp_path_factory.mktemp("bench") / "lake"
    import_dataset(
        "evidence-inference",
        datasets_dir,
        root / "landing",
        load_catalogue(DEFAULT_CATALOGUE),
        ids={"PMC1562433", "PMC2249589"},
    )
    return root


def _resources(root, datasets_dir, **kw):
    return lake_resources(root) | {"benchmark": BenchmarkResource(datasets_dir=str(datasets_dir), **kw)}


def test_generated_questions_use_only_their_seed_window(bench_lake, datasets_dir):
    result = dg.materialize(
        ASSETS,
        partition_key="PFP",
        resources=_resources(bench_lake, datasets_dir),
        instance=dg.DagsterInstance.ephemeral(),
        selection=[*ASSETS[:6], pico_extractions],
    )
    assert result.success
    bench = pl.read_parquet(bench_lake / "assets" / "benchmark_qa" / "PFP.parquet")
    windows = pl.read_parquet(bench_lake / "assets" / "evidence_windows" / "PFP.parquet")
    text = dict(zip(windows["window_id"].to_list(), windows["text"].to_list()))
    generated = bench.filter(pl.col("source") == "generated")
    assert generated.height >= 1
    dropped = result.asset_materializations_for_node("benchmark_qa")[0].metadata["near_duplicates_dropped"].value
    release = bench.filter(pl.col("source") == "sr_rag_release").height  # the release's PFP questions: 87
    assert 0 < dropped and 87 - dropped <= release < 87  # some of them repeat another question
    assert {r.name: r for r in quality_rules(bench, text, embed)}["near_duplicate_questions"].passed
    for row in generated.iter_rows(named=True):
        seed_tokens = set(re.findall(r"\w+", text[row["seed_window_id"]].lower()))
        for field in ("gold_p", "gold_i", "gold_c", "gold_o", "gold_t"):
            if row[field]:
                assert set(re.findall(r"\w+", row[field].lower())) <= seed_tokens, (field, row[field])
        assert row["seed_window_id"] in row["gold_window_ids"]
        grades = re.findall(r"\(grade ([A-E])\)", row["ideal_answer"])  # the ideal answer is ordered by grade
        quoted = re.findall(r"\[([^\]\s]+)\]", row["ideal_answer"])  # gold windows without a finding add nothing
        assert grades == sorted(grades) and len(grades) == len(quoted)
        assert row["seed_window_id"] in quoted and set(quoted) <= set(row["gold_window_ids"])
        assert set(re.findall(r"\w+", row["exact_answer"].lower())) <= seed_tokens


def test_blocking_check_stops_splits_and_keeps_the_last_good_benchmark(bench_lake, datasets_dir, monkeypatch):
    good = dg.materialize(
        ASSETS,
        partition_key="PFP",
        selection=ASSETS[:5],
        instance=dg.DagsterInstance.ephemeral(),
        resources=_resources(bench_lake, datasets_dir, sources=["sr_rag_release"]),
    )
    assert good.success
    final, staged = (bench_lake / d / "benchmark_qa" / "PFP.parquet" for d in ("assets", "staging"))
    last_good = pl.read_parquet(final)
    dropped = good.asset_materializations_for_node("benchmark_qa")[0].metadata["near_duplicates_dropped"].value
    assert last_good.height == 87 - dropped and not staged.exists()  # passed, so promoted

    def broken(self, code, *args, **kwargs):
        bad = [
            sources.row(
                question_id="dup",
                condition=code,
                source="generated",
                question=f"Question {n}?",
                exact_answer="answer",
                split_kind="main",
                gold_window_ids=[gold],
            )
            for n, gold in enumerate(["missing-window", "missing-window"])
        ]
        return sources.frame(bad)

    monkeypatch.setattr("ebm_platform.benchmark.generation.QuestionGenerator.rows", broken)
    result = dg.materialize(
        ASSETS,
        partition_key="PFP",
        raise_on_error=False,
        resources=_resources(bench_lake, datasets_dir, sources=["generated"]),
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert not result.success
    evaluations = {
        e.asset_check_evaluation_data.check_name: e.asset_check_evaluation_data
        for e in result.all_events
        if e.event_type_value == "ASSET_CHECK_EVALUATION"
    }
    structure = evaluations["benchmark_structure"]
    assert not structure.passed and structure.severity == dg.AssetCheckSeverity.ERROR
    meta = structure.metadata
    assert meta["unique_ids.failing_rows"].value == [{"question_id": "dup"}]
    assert {r["gold_window_ids"] for r in meta["gold_windows_exist.failing_rows"].value} == {"missing-window"}
    assert "benchmark_splits" not in {
        m.asset_key.path[-1]
        for m in result.get_asset_materialization_events()
        for m in [m.event_specific_data.materialization]
    }
    assert pl.read_parquet(final).equals(last_good)  # what downstream assets read is the last good benchmark
    assert pl.read_parquet(staged)["question_id"].to_list() == ["dup", "dup"]  # the failed write, kept to inspect


def test_discarded_questions_stay_out_through_export_and_materialisation(tmp_path, datasets_dir):
    """export -> edit -> materialise -> export -> materialise, through Dagster and the CLI's export."""
    lake = tmp_path / "lake"
    resources = _resources(lake, datasets_dir, sources=["sr_rag_release"])

    def materialise() -> pl.DataFrame:
        result = dg.materialize(
            [source_documents, evidence_windows, pico_extractions, benchmark_qa, benchmark_structure],
            selection=[benchmark_qa, benchmark_structure],
            partition_key="PFP",
            resources=resources,
            instance=dg.DagsterInstance.ephemeral(),
        )
        assert result.success
        return pl.read_parquet(lake / "assets" / "benchmark_qa" / "PFP.parquet")

    first = materialise()
    export_sheet(lake, first)
    gone = first["question_id"].to_list()[:3]
    _decide(sheet_path(lake), {q: "discard" for q in gone})
    second = materialise()
    assert second.height == first.height - 3 and not set(gone) & set(second["question_id"].to_list())
    export_sheet(lake, second)  # the old export rebuilt the sheet from this filtered table and lost them
    third = materialise()
    assert third["question_id"].to_list() == second["question_id"].to_list()
    assert {q for q, r in latest(lake).items() if r["decision"] == "discard"} == set(gone)


def test_a_document_in_two_conditions_yields_distinct_question_ids(datasets_dir):
    """Dagster's checks see every partition, so the same abstract tagged twice must not collide."""
    pmid = next(iter(json.loads((datasets_dir / "pubmedqa" / "ori_pqal_dev.json").read_text())))
    documents = pl.DataFrame({"source": [f"pubmedqa:{pmid}"], "doc_id": ["d1"]})
    windows = pl.DataFrame({"window_id": ["d1-w"], "doc_id": ["d1"], "text": ["t"]})
    both = pl.concat([sources.pubmedqa_rows(code, datasets_dir, documents, windows) for code in ("LBP", "NP")])
    assert both.height == 2 and both["question_id"].n_unique() == 2
    assert (structural_rules(both, {"d1-w"})[1]).passed


def test_split_problems_name_repeated_ids_lost_questions_and_leaks():
    from ebm_platform.benchmark.splits import split_problems

    bench = pl.DataFrame(
        {
            "question_id": ["a", "a", "b", "c", "d"],
            "condition": ["PFP", "ACL", "PFP", "PFP", "ACL"],
            "question": ["Does X help?", "Does X help?", "Does Y help?", "does  y help", "Z?"],
        }
    )
    splits = pl.DataFrame(
        {"question_id": ["a", "b", "c"], "condition": ["PFP", "PFP", "PFP"], "split": ["train", "train", "test"]}
    )
    problems = split_problems(bench, splits)
    assert problems["repeated_question_ids"] == [{"question_id": "a", "condition": ["ACL", "PFP"]}]
    assert problems["questions_without_split"] == ["d"]
    assert problems["text_in_two_splits"] == [{"question_id": ["b", "c"], "split": ["test", "train"]}]
    sound = bench.filter(pl.col("question_id").is_in(["b", "d"]))
    assert not any(
        split_problems(
            sound, pl.DataFrame({"question_id": ["b", "d"], "condition": ["PFP", "ACL"], "split": ["train", "test"]})
        ).values()
    )


# PFP's Evidence Inference questions replaced by two that fail benchmark_structure (a repeated id, a
# gold window that does not exist). A sitecustomize, so that every process of the build has it: the
# build itself, the executor's forkserver and its step processes.
BROKEN_PFP_SOURCE = """
from ebm_platform.benchmark import sources

def broken(code, *args):
    if code != "PFP":
        return sources.frame([])
    return sources.frame([sources.row(question_id="dup", condition=code, source="evidence_inference",
                                      question=f"Question {n}?", exact_answer="a", split_kind="main",
                                      gold_window_ids=["missing-window"]) for n in range(2)])

sources.evidence_inference_rows = broken
"""

CLI_BUILD = """
import dagster as dg
from ebm_platform.runs import run_all_partitions
from ebm_platform.definitions import defs

run_all_partitions(codes=["PFP", "MACL"], global_job="graph_global_job")
splits = defs.resolve_job_def("global_job").execute_in_process(
    instance=dg.DagsterInstance.get(), asset_selection=[dg.AssetKey("benchmark_splits")])
print("BLOCKED", splits.get_asset_materialization_events()[0].materialization.metadata["conditions_blocked"].value)
"""


def test_partition_runs_start_with_the_largest_landing_folders(tmp_path):
    from ebm_platform.runs import largest_first

    for code, size in (("A", 10), ("B", 300), ("C", 0)):
        (tmp_path / code).mkdir()
        if size:
            (tmp_path / code / "doc.md").write_bytes(b"x" * size)
    assert largest_first(["A", "B", "C", "D"], tmp_path) == ["B", "A", "C", "D"]  # ties keep their order


def test_the_cli_build_goes_on_past_a_blocked_benchmark_which_stays_out_of_the_splits(
    tmp_path, datasets_dir, environment_models
):
    """The CLI path (`ebm demo`'s partition runs through the instance, two at a time in worker
    processes, then the global job) with PFP's benchmark broken:
    the build reports PFP and carries on, MACL is built, PFP keeps its last good benchmark (none
    yet) and benchmark_splits leaves it out."""
    import os

    from ebm_platform_tests.conftest import REPO
    from ebm_platform_tests.sessions import run_python

    lake, home = tmp_path / "lake", tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text(
        (REPO / "dagster.yaml").read_text().replace("data_lake/.dagster", str(home / ".dagster"))
    )
    import_dataset(
        "evidence-inference",
        datasets_dir,
        lake / "landing",
        load_catalogue(DEFAULT_CATALOGUE),
        ids={"PMC1562433", "PMC2249589"},
    )
    (tmp_path / "patch").mkdir()
    (tmp_path / "patch" / "sitecustomize.py").write_text(BROKEN_PFP_SOURCE)
    env = {
        **os.environ,
        "PYTHONPATH": f"{tmp_path / 'patch'}:{REPO}",
        "DAGSTER_HOME": str(home),
        "EBM_LAKE": str(lake),
        "EBM_DATASETS_DIR": str(datasets_dir),
        "EBM_BENCHMARK_SOURCES": "sr_rag_release,evidence_inference",
    }
    done = run_python(CLI_BUILD, env, REPO, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "PFP's benchmark failed benchmark_structure" in done.stdout and "2 partition runs at a time" in done.stdout
    assert {line.split()[2] for line in done.stdout.splitlines() if line.startswith(("[ 1/2]", "[ 2/2]"))} == {
        "PFP",
        "MACL",
    }
    assert "BLOCKED {'PFP': \"benchmark_structure's latest evaluation is FAILED\"}" in done.stdout
    assert not (lake / "assets" / "benchmark_qa" / "PFP.parquet").exists()  # never passed: nothing promoted
    assert pl.read_parquet(lake / "staging" / "benchmark_qa" / "PFP.parquet")["question_id"].to_list().count("dup") == 2
    splits = pl.read_parquet(lake / "assets" / "benchmark_splits.parquet")
    assert set(splits["condition"]) == {"MACL"}
    # both partition runs are in the instance and executed their steps in a worker process
    with dg.DagsterInstance.from_config(str(home)) as instance:
        runs = {r.tags.get("dagster/partition"): r for r in instance.get_runs() if r.job_name == "conditions_job"}
        assert set(runs) == {"PFP", "MACL"}
        for run in runs.values():
            engine = [e.message for e in instance.all_logs(run.run_id) if e.message]
            assert any(m.startswith("Executing steps in process (pid: ") for m in engine), engine[:5]
