"""Fusion, MaxSim, dual pools, BETR scoring, the CLI's error paths and an end-to-end ask."""

import json

import dagster as dg
import numpy as np
import polars as pl
import pytest

from ebm_platform.betr.model import BetrParameters, parameters_path
from ebm_platform.cli import main
from ebm_platform.conditions import load_catalogue
from ebm_platform.corpus.importers import import_dataset
from ebm_platform.defs.corpus import evidence_windows, source_documents
from ebm_platform.defs.graph import knowledge_graph, pico_extractions
from ebm_platform.defs.index import window_index
from ebm_platform.retrieval.answer import missing_terms, pico_comparison
from ebm_platform.retrieval.ask import ask, retriever_for
from ebm_platform.retrieval.fusion import rrf, top
from ebm_platform.retrieval.hyde import offline_passages
from ebm_platform.retrieval.lexical import TermStatistics
from ebm_platform.retrieval.pipeline import QuestionError, validate_question
from ebm_platform.retrieval.rerank import maxsim
from ebm_platform.graph.pico_rules import question_anchors
from ebm_platform.settings import DEFAULT_CATALOGUE
from ebm_platform_tests.conftest import lake_resources
from ebm_platform_tests.test_readers import GUIDELINE

QUESTION = ("In adults with patellofemoral pain, does adding hip strengthening to knee exercise reduce pain "
            "more than knee exercise alone?")


def test_rrf_arithmetic_and_ranks():
    scores, ranks = rrf({"dense": ["a", "b", "c"], "graph": ["b", "a"], "hyde": ["c"]}, k=60)
    assert scores["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 61)
    assert ranks["b"] == {"dense": 2, "graph": 1}
    assert top(scores, 3) == ["a", "b", "c"]  # a = b (1/61 + 1/62) > c (1/61 + 1/63); ties by id
    assert rrf({"x": ["a", "a", "b"]})[1]["b"] == {"x": 2}  # duplicates count once


def test_maxsim_is_sum_of_best_token_matches():
    q = np.array([[1, 0], [0, 1]], dtype=np.float32)
    d = np.array([[1, 0], [0.6, 0.8]], dtype=np.float32)
    assert maxsim(q, d) == pytest.approx(1.0 + 0.8)
    assert maxsim(q, np.zeros((0, 2), dtype=np.float32)) == 0.0


def test_betr_scoring_and_round_trip(tmp_path):
    params = BetrParameters(a=1.0348, u={"A": 0, "B": -0.1287, "C": -0.2575, "D": -0.3863, "E": -0.5151})
    assert params.score(1.0, "A") - params.score(1.0, "C") == pytest.approx(0.2575)
    params.save(parameters_path(tmp_path))
    assert BetrParameters.load(parameters_path(tmp_path)).u == params.u


def test_offline_hyde_never_invents_missing_fields():
    anchors = question_anchors("Does dry needling reduce pain in runners with plantar heel pain?")
    passages = offline_passages("q", anchors)
    assert len(passages) == 3 and all("dry needling" in p for p in passages)
    assert anchors.comparator is None and not any("compared with" in p or "versus" in p for p in passages)
    assert anchors.timepoint is None and not any("week" in p or "month" in p for p in passages)


@pytest.mark.parametrize("bad, message", [("", "empty"), ("   ", "empty"), ("x" * 2001, "limit is 2000"),
                                          (42, "must be text"), ("???", "no words")])
def test_bad_questions_get_clear_errors(bad, message):
    with pytest.raises(QuestionError, match=message):
        validate_question(bad)


def test_cli_error_paths(capsys, lake):
    assert main(["ask", ""]) == 2
    assert "question is empty" in capsys.readouterr().err
    assert main(["ask", "Does ice help ankle sprain?"]) == 2  # the lake has no index yet
    assert "materialise window_index first" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["ask", "q", "--json", "--unknown-flag"])


@pytest.fixture(scope="module")
def small_lake(tmp_path_factory, datasets_dir):
    """Two real PFP articles plus one grade-A guideline, materialised through the real assets."""
    root = tmp_path_factory.mktemp("retrieval") / "lake"
    import_dataset("evidence-inference", datasets_dir, root / "landing", load_catalogue(DEFAULT_CATALOGUE),
                   ids={"PMC1562433", "PMC2249589"})
    (root / "landing" / "PFP" / "guideline.md").write_bytes(GUIDELINE)
    assets = [source_documents, evidence_windows, pico_extractions, knowledge_graph, window_index]
    assert dg.materialize(assets, partition_key="PFP", resources=lake_resources(root),
                          instance=dg.DagsterInstance.ephemeral()).success
    return root


def test_end_to_end_ask_on_real_documents(small_lake):
    result = ask(QUESTION, condition="PFP", explain=True, lake=small_lake)
    assert result["mode"].startswith("offline-extractive")
    assert result["core_answer"] and all(item["citations"] for item in result["core_answer"])
    assert len(result["citations"]) >= 3
    for cite in result["citations"]:
        assert {"title", "grade", "condition", "window_id", "score"} <= set(cite)
    grades = [group["grade"] for group in result["evidence_by_grade"]]
    assert grades == sorted(grades) and grades[0] == "A"  # guideline first
    assert set(result["pico_comparison"]["fields"]) == {"population", "intervention", "comparator", "outcome"}
    pools = {row["pool"] for row in result["explain"]}
    assert pools == {"A", "B-E"}
    assert sum(row["pool"] == "A" for row in result["explain"]) <= 16
    assert all("channel_ranks" in row and "fused_rrf" in row for row in result["explain"])
    assert set(result["timings_s"]) == {"encode", "graph", "search", "fusion", "evidence read", "rerank", "answer"}


def test_naive_strategy_and_unknown_strategy(small_lake):
    naive = ask(QUESTION, strategy="naive", lake=small_lake)
    assert naive["notes"]["betr"] == "not applied" and len(naive["citations"]) == 12
    with pytest.raises(QuestionError, match="unknown strategy"):
        ask(QUESTION, strategy="magic", lake=small_lake)


def test_fitted_betr_parameters_are_applied(small_lake):
    BetrParameters(a=1.0, u={"A": 0.0, "B": -1, "C": -1, "D": -1, "E": -1}).save(parameters_path(small_lake))
    retriever_for.cache_clear()
    try:
        result = ask(QUESTION, explain=True, lake=small_lake)
        adjusted = [row for row in result["explain"] if row["fine_s"] is not None]
        assert all(row["grade_adjustment"] == (0.0 if row["grade"] == "A" else -1.0) for row in adjusted)
        assert result["citations"][0]["grade"] == "A"
    finally:
        parameters_path(small_lake).unlink()
        retriever_for.cache_clear()


def test_ask_cli_json(small_lake, monkeypatch, capsys):
    from ebm_platform.settings import get_settings

    monkeypatch.setenv("EBM_LAKE", str(small_lake))
    get_settings.cache_clear()
    try:
        assert main(["ask", QUESTION, "--json"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["strategy"] == "sr_rag" and out["citations"]
    finally:
        get_settings.cache_clear()


def test_index_stores_each_windows_tokens_and_sentences_from_one_pass(small_lake):
    """MaxSim and the extractive answer read what window_index stored; the stored token vectors
    are the encoder's own for the indexed text, and every stored sentence is a span of the window."""
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.index.window_index import WindowIndex, index_text

    index = WindowIndex(small_lake / "stores" / "lancedb")
    ids = pl.read_parquet(small_lake / "assets" / "evidence_windows" / "PFP.parquet")["window_id"].to_list()
    rows = index.rows_for_windows(ids[:3] + ids[-3:])
    late = index.late_interaction(rows["window_id"].to_list())
    encoder = get_encoder()
    for row in rows.iter_rows(named=True):
        stored = late[row["window_id"]]
        full, prefix = index_text(row["title"], row["section"], row["text"])
        fresh = encoder.encode_windows([full], None, [prefix])[0]
        assert stored["tokens"].shape == fresh.tokens.shape
        assert np.allclose(stored["tokens"].astype(np.float32), fresh.tokens.astype(np.float32), atol=2e-3)
        assert float(np.asarray(row["vector"]) @ fresh.vector) > 0.9999
        assert len(stored["sentences"]) == len(stored["sentence_vectors"])
        assert all(sentence in row["text"] for sentence in stored["sentences"])


def test_windows_already_indexed_are_copied_not_embedded_again(tmp_path, monkeypatch):
    monkeypatch.setattr("ebm_platform.index.window_index.ENCODE_BATCH", 1)  # one staged batch per window
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.index.window_index import WindowIndex

    def windows(*ids: str) -> pl.DataFrame:
        return pl.DataFrame({"window_id": list(ids), "doc_id": ["d"] * len(ids), "grade": ["C"] * len(ids),
                             "title": ["Knee trial"] * len(ids), "year": [2020] * len(ids),
                             "section": ["Results"] * len(ids),
                             "text": [f"Pain fell more with exercise {i} than with rest in the trial." for i in ids]})

    index, encoder = WindowIndex(tmp_path / "lancedb"), get_encoder()
    assert index.replace_partition("X", windows("w1", "w2"), encoder) == {"written": 2, "encoded": 2, "reused": 0}
    assert index.replace_partition("Y", windows("w3"), encoder) == {"written": 1, "encoded": 1, "reused": 0}
    assert index.replace_partition("Z", windows("w2", "w4"), encoder) == {"written": 2, "encoded": 1, "reused": 1}
    late = index.late_interaction(["w2"])["w2"]
    assert late["sentences"] == ["Pain fell more with exercise w2 than with rest in the trial."]
    assert index.count() == 5 and index.count("Z") == 2


def test_an_empty_partition_beside_an_existing_index_writes_nothing(small_lake):
    from ebm_platform.index.window_index import WindowIndex

    index = WindowIndex(small_lake / "stores" / "lancedb")
    before = index.count()
    result = dg.materialize([source_documents, evidence_windows, window_index], partition_key="ITBS",
                            resources=lake_resources(small_lake), instance=dg.DagsterInstance.ephemeral())
    assert result.success
    assert result.asset_materializations_for_node("window_index")[0].metadata["empty"].value is True
    assert index.count() == before and index.count("ITBS") == 0


def test_term_coverage_weighs_rare_terms_and_stays_bounded():
    stats = TermStatistics(["knee pain improved", "knee pain at rest", "hip abduction strength and knee pain",
                            "knee brace use"])
    question = "Does hip abduction reduce knee pain?"
    assert stats.coverage(question, "hip abduction reduce knee pain") == pytest.approx(1.0)
    assert stats.coverage(question, "shoulder") == 0.0
    rare, common = stats.coverage(question, "hip abduction"), stats.coverage(question, "knee pain")
    assert 0.0 < common < rare < 1.0  # 'hip'/'abduction' occur in one window, 'knee' in all four
    assert stats.coverage("what is the", "the what") == 0.0  # stopwords only


def test_pico_comparison_names_question_terms_the_evidence_lacks():
    assert missing_terms("hip strengthening to knee exercise", "knee muscle strengthening exercises") == ["hip"]
    assert missing_terms("adults with patellofemoral pain", "patients with patellofemoral pain") == []
    row = {"text": "Sixty patients with patellofemoral pain were randomised to knee strengthening exercises or a "
                   "waiting list control. Pain decreased more in the exercise group.",
           "grade": "C", "doc_id": "d1"}
    same = lambda texts: np.ones((len(texts), 1))  # every phrase similar: only the term check decides
    result = pico_comparison(question_anchors(QUESTION), [row], same)
    assert result["fields"]["population"]["status"] == "match"
    intervention = result["fields"]["intervention"]
    assert intervention["status"] == "partial match" and "hip" in intervention["missing_terms"]
    assert any(lim.startswith("intervention only partly matched: 'hip") for lim in result["limitations"])
