"""The closed-question reader: its evidence and features, its cross-validated training on the real
PubMedQA questions beside the verdict mapping and the majority class, the bottom line it answers,
and the blocking check that keeps a failed reader away from the queries."""

from __future__ import annotations

import dagster as dg
import numpy as np
import pytest

from ebm_platform.evaluation.closed_training import cross_validation, example_matrix, fold_models, pubmedqa_examples
from ebm_platform.evaluation.verdict_training import spans
from ebm_platform.retrieval.bottom_line import bottom_line, is_closed
from ebm_platform.retrieval.closed_answer import (
    ARGMAX,
    FEATURES,
    MAYBE,
    ClosedAnswerModel,
    calibrate,
    decide,
    features,
    question_shares,
    results_sentences,
)
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.retrieval.verdict import DECREASED, INCREASED, VerdictModel
from ebm_platform_tests.test_bottom_line import AGAINST_OPIOIDS, OPIOIDS, _answer, _rules


@pytest.fixture(scope="module")
def span_verdict(datasets_dir) -> VerdictModel:
    """The verdict model's span classifier, fitted on Evidence Inference's train spans (no sentence
    scorer: the reader reads only the span classifier)."""
    texts, labels, _ = spans(datasets_dir, "train")
    return VerdictModel.train(texts, labels)


@pytest.fixture(scope="module")
def examples(datasets_dir) -> list[dict]:
    return pubmedqa_examples(datasets_dir)


def test_results_sentences_prefer_a_results_section_then_findings() -> None:
    sentences = [
        ("Low back pain is common.", "BACKGROUND"),
        ("Pain fell more with exercise (p = 0.01).", "RESULTS"),
        ("Exercise may help.", "CONCLUSIONS"),
    ]
    assert results_sentences(sentences) == ["Pain fell more with exercise (p = 0.01)."]
    unlabelled = [("Low back pain is common.", None), ("Pain was significantly lower with exercise (p = 0.01).", None)]
    assert results_sentences(unlabelled) == ["Pain was significantly lower with exercise (p = 0.01)."]
    assert results_sentences([("Nothing measured here.", None)]) == ["Nothing measured here."]


def test_pubmedqa_examples_are_the_500_questions_without_their_conclusions(examples, datasets_dir) -> None:
    import json

    records = json.loads((datasets_dir / "pubmedqa" / "ori_pqal_dev.json").read_text(encoding="utf-8"))
    assert len(examples) == 500 and {e["label"] for e in examples} == {"yes", "no", "maybe"}
    first = examples[0]
    record = records[first["pmid"]]
    assert first["question"] == record["QUESTION"]
    text = " ".join(s for s, _ in first["sentences"])
    assert record["LONG_ANSWER"][:60] not in text  # the reasoning-required setting: no conclusion
    assert {section for _, section in first["sentences"]} <= set(record["LABELS"])


def test_features_count_significance_no_difference_and_the_question_form(span_verdict) -> None:
    x = features(
        "Is taping not effective?",
        ["Pain did not differ (p = 0.4).", "There was no significant difference in function."],
        span_verdict.pipeline,
    )
    named = dict(zip(FEATURES, x))
    assert x.shape == (len(FEATURES),) == (30,)
    assert named["no-difference sentences"] == 2 and named["results sentences"] == 2
    assert named["no-difference share"] == 1.0 and named["contrast sentences"] == 0
    assert named["question: negation"] == 1 and named["question words"] == 4
    assert named["question: sceptical framing"] == 0
    assert (
        features("Is routine drainage really necessary?", [], span_verdict.pipeline)[
            FEATURES.index("question: sceptical framing")
        ]
        == 1
    )
    assert named["span classifier max no diff"] > named["span classifier max increased"]
    mixed = dict(
        zip(
            FEATURES,
            features(
                "Is taping effective?",
                ["Pain fell more with taping (p = 0.01).", "However, function did not differ (p = 0.6)."],
                span_verdict.pipeline,
            ),
        )
    )
    assert mixed["contrast sentences"] == 1 and mixed["contrast share"] == 0.5
    assert (
        mixed["span classifier last no diff"] > mixed["span classifier last increased"]
    )  # the last sentence's reading
    assert mixed["span classifier spread no diff"] > 0  # the two sentences read differently


def test_the_results_about_the_question_are_read_apart_from_the_others(span_verdict) -> None:
    """Of a study's many results, the sentences naming the question's words answer it: here the one
    on smoking and fracture risk finds no difference although most results are significant."""
    question = "Does smoking change fracture risk?"
    results = [
        "Smoking did not change fracture risk (p = 0.41).",
        "Bone density was significantly lower in women (p < 0.01).",
        "Age was significantly associated with falls (p = 0.002).",
        "Vitamin D levels were significantly lower in winter (p = 0.03).",
    ]
    assert question_shares(question, results) == [1.0, 0.0, 1.0, 0.0]
    named = dict(zip(FEATURES, features(question, results, span_verdict.pipeline)))
    assert named["no-difference share"] == 0.25  # over every results sentence
    assert named["no-difference share of the question's sentences"] == 1.0
    assert question_shares(question, []) == [0.0] * 4
    assert question_shares("Why?", results) == [0.25, 0.75, 0.25, 0.75]  # none names the question: all alike


def test_the_reader_answers_the_class_with_the_largest_weighted_probability() -> None:
    probabilities = np.array([[0.1, 0.2, 0.7], [0.3, 0.25, 0.45], [0.6, 0.3, 0.1], [0.05, 0.45, 0.5]])
    classes = ["maybe", "no", "yes"]
    assert decide(probabilities, classes, ARGMAX) == ["yes", "yes", MAYBE, "yes"]  # the most probable class
    assert decide(probabilities, classes, {MAYBE: 2.0}) == ["yes", MAYBE, MAYBE, "yes"]  # 0.3 x 2 > 0.45
    assert decide(probabilities, classes, {MAYBE: 2.0, "no": 1.2}) == ["yes", MAYBE, MAYBE, "no"]  # 0.45 x 1.2 > 0.5
    assert decide(probabilities[:, 1:], ["no", "yes"], {MAYBE: 5.0}) == ["yes", "yes", "no", "yes"]  # no maybe class


def test_the_weights_are_calibrated_on_the_training_questions_within_their_accuracy_cost(
    examples, span_verdict
) -> None:
    X = example_matrix(examples, span_verdict.pipeline)
    labels = [e["label"] for e in examples]
    C, weights, report = calibrate(X, labels)
    inner = report["inner_cv"]
    assert inner["C"] == C and weights == {MAYBE: inner["maybe_weight"], "no": inner["no_weight"]}
    assert weights != {MAYBE: 1.0, "no": 1.0}  # the argmax is not what macro-F1 prefers on these questions
    model = ClosedAnswerModel.train(X, labels, span_verdict.pipeline)
    assert model.weights == weights and model.meta["inner_cv"] == inner
    assert MAYBE in model.predict(X)  # it abstains somewhere
    # too few examples of a class to cross-validate: the most probable class answers
    few = [i for i, label in enumerate(labels) if label != MAYBE][:60] + [labels.index(MAYBE)]
    assert calibrate(X[few], [labels[i] for i in few])[1] == ARGMAX


def test_cross_validated_reader_beats_the_verdict_mapping_and_the_majority_class(examples, span_verdict) -> None:
    """Ten folds over the real 500 questions: each predicted by a model that did not see it."""
    X = example_matrix(examples, span_verdict.pipeline)
    readers = fold_models(examples, span_verdict.pipeline, X)
    report = cross_validation(examples, span_verdict, X, readers)
    learned, mapped, constant = report["learned"], report["verdict mapping"], report["majority class"]
    assert report["questions"] == 500 and constant["answers"] == {"yes": 500}
    assert learned["accuracy"] > constant["accuracy"] and learned["macro_f1"] > mapped["macro_f1"]
    assert learned["answers"].get("maybe", 0) > 0  # the calibrated weights say maybe for some questions
    assert sum(sum(row.values()) for row in learned["confusion"].values()) == 500
    assert len(readers) == 500 and len({id(m) for m in readers.values()}) == 10
    held = examples[0]
    assert readers[held["pmid"]].meta["trained_on"] == 500 - readers[held["pmid"]].meta["held_out"]


def test_reader_round_trips_and_reads_one_source(tmp_path, examples, span_verdict) -> None:
    X = example_matrix(examples[:200], span_verdict.pipeline)
    model = ClosedAnswerModel.train(X, [e["label"] for e in examples[:200]], span_verdict.pipeline, {"key": "k"})
    model.save(tmp_path)
    loaded = ClosedAnswerModel.load(tmp_path)
    assert loaded is not None and loaded.meta == model.meta and loaded.meta["key"] == "k"
    assert loaded.meta["trained_on"] == 200 and loaded.weights == model.weights
    label, probabilities = loaded.read(examples[300]["question"], examples[300]["sentences"])
    assert label in ("yes", "no", "maybe") and sum(probabilities.values()) == pytest.approx(1.0, abs=0.01)
    assert loaded.predict(X[:5]) == model.predict(X[:5])
    assert ClosedAnswerModel.load(tmp_path / "none") is None
    # a reader fitted on another version's features is not loaded (its lake answers by the rules)
    ClosedAnswerModel.train(X[:, :-1], [e["label"] for e in examples[:200]], span_verdict.pipeline).save(tmp_path)
    assert ClosedAnswerModel.load(tmp_path) is None
    # nor one stored without class weights (a P(maybe) threshold instead: the version before them)
    ClosedAnswerModel(model.spans, model.classifier, {"maybe_threshold": 0.3}).save(tmp_path)
    assert ClosedAnswerModel.load(tmp_path) is None


@pytest.mark.parametrize(
    "question, closed",
    [
        ("Therapeutic anticoagulation in the trauma patient: is it safe?", True),
        ("Aripiprazole: a new risk factor for pathological gambling?", True),
        ("Human papillomavirus and pterygium. Is the virus a risk factor?", True),
        ("Exercise therapy versus usual care for chronic low back pain: which works better?", False),
        ("How effective is manual therapy for neck pain?", False),
        ("Treatments for patellofemoral pain", False),
    ],
)
def test_closed_questions_in_pubmedqa_phrasings(question: str, closed: bool) -> None:
    assert is_closed(question) is closed


def test_the_reader_answers_from_the_top_ranked_study_and_gives_each_source_its_side() -> None:
    question = "Is taping effective for patellofemoral pain?"
    statements = [("Taping improved pain scores (p = 0.03).", 1), ("Taping made no difference to pain (p = 0.6).", 2)]
    answer = _answer(INCREASED, statements, {1: "C", 2: "C"})
    reads = {1: "no", 2: "yes"}
    line = bottom_line(question, question_anchors(question), answer, _rules, reads.__getitem__)
    assert line["answer"] == "no" and line["text"] == "No: the top-ranked study reports no such effect."
    assert line["sides"] == {"1": "supports", "2": "contradicts"} and line["read_by"].startswith(
        "closed-question reader"
    )
    review = _answer(INCREASED, statements, {1: "B", 2: "C"})
    without = bottom_line(question, question_anchors(question), review, _rules)
    assert without["answer"] == "yes" and without["read_by"].startswith("the verdict")  # the grade B source's verdict
    # a systematic review's finding of the effect is its answer, whatever the reader, trained on trials, reads
    line = bottom_line(question, question_anchors(question), review, _rules, reads.__getitem__)
    assert line["answer"] == "yes" and line["text"] == "Yes: the top-ranked review reports the effect asked about."


def test_a_reader_yes_to_a_directed_question_is_no_when_the_effect_runs_the_other_way() -> None:
    question = "Does bracing increase re-injury in ankle sprain?"
    answer = _answer(DECREASED, [("Bracing reduced re-injury compared with no brace (p = 0.02).", 1)], {1: "B"})
    line = bottom_line(question, question_anchors(question), answer, _rules, lambda n: "yes")
    assert line["answer"] == "no"
    answer = _answer(DECREASED, [("Re-injury did not differ with bracing (p = 0.5).", 1)], {1: "B"})
    assert bottom_line(question, question_anchors(question), answer, _rules, lambda n: "yes")["answer"] == "yes"


def test_a_guideline_recommendation_still_decides_over_the_reader() -> None:
    question, against = OPIOIDS, AGAINST_OPIOIDS
    answer = _answer(
        INCREASED,
        [("Opioids increased pain relief compared with placebo (p < 0.01).", 1), (against, 2)],
        {1: "C", 2: "A"},
    )
    line = bottom_line(question, question_anchors(question), answer, _rules, lambda n: "yes")
    assert line["answer"] == "no" and line["text"] == "No: the guideline recommends against it."
    unstated = _answer(INCREASED, [("Opioids did not reduce pain more than placebo (p = 0.4).", 1)], {1: "A"})
    line = bottom_line(question, question_anchors(question), unstated, _rules, lambda n: "yes")
    assert line["answer"] == "no"  # a guideline's text is read by its verdict, never by the study reader


def test_the_reader_is_trained_once_per_environment_and_key(
    tmp_path, datasets_dir, examples, span_verdict, monkeypatch
):
    """`cached_closed_model` fits the reader once for a verdict model, code and PubMedQA file and then
    loads it; another verdict model (another key) fits it again."""
    from ebm_platform import trained_models
    from ebm_platform.evaluation import closed_training

    monkeypatch.setenv("EBM_MODEL_CACHE", str(tmp_path))
    X = example_matrix(examples[:200], span_verdict.pipeline)
    fitted = []

    def train(datasets, verdict):
        fitted.append(verdict.meta["key"])
        model = ClosedAnswerModel.train(X, [e["label"] for e in examples[:200]], span_verdict.pipeline)
        model.meta["cross_validation"] = {"questions": 200}
        return model

    monkeypatch.setattr(closed_training, "train_closed_model", train)
    first, second = (VerdictModel(span_verdict.pipeline, {"key": key}) for key in ("verdict-a", "verdict-b"))
    said: list[str] = []
    model = trained_models.cached_closed_model(datasets_dir, first, said.append)
    again = trained_models.cached_closed_model(datasets_dir, first, said.append)
    assert fitted == ["verdict-a"] and said and "trained earlier in this environment" in said[0]
    assert again.meta == model.meta and again.predict(X[:5]) == model.predict(X[:5])
    assert model.meta["key"] == closed_training.training_key(datasets_dir, "verdict-a")
    trained_models.cached_closed_model(datasets_dir, second)
    assert fitted == ["verdict-a", "verdict-b"]


def test_a_failed_reader_check_blocks_and_queries_stay_on_the_verdict(tmp_path, datasets_dir, monkeypatch) -> None:
    """A reader that does not beat the verdict mapping fails the blocking check, is staged but never
    promoted, and what depends on it is not materialised: the Retriever finds no reader."""
    from ebm_platform.defs import retrieval as defs_retrieval
    from ebm_platform.defs.io import model_folder
    from ebm_platform.defs.resources import BenchmarkResource
    from ebm_platform.lake_layout import LakeLayout
    from ebm_platform_tests.test_retrieval import lake_resources

    figures = {"accuracy": 0.5, "macro_f1": 0.30}
    report = {
        "questions": 500,
        "learned": {**figures, "confusion": {}},
        "verdict mapping": {"accuracy": 0.47, "macro_f1": 0.33},
        "majority class": {"accuracy": 0.55, "macro_f1": 0.24},
    }
    worse = ClosedAnswerModel(None, None, {"cross_validation": report})
    monkeypatch.setattr(defs_retrieval, "cached_closed_model", lambda *args, **kwargs: worse)
    monkeypatch.setattr(defs_retrieval, "cached_verdict_model", lambda *args, **kwargs: None)

    @dg.asset(deps=[defs_retrieval.closed_answer_model])
    def answers_downstream() -> None:
        """Stands for evaluation_report, which answers with the reader."""

    result = dg.materialize(
        [defs_retrieval.closed_answer_model, defs_retrieval.closed_answer_model_beats_baselines, answers_downstream],
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
        resources=lake_resources(tmp_path) | {"benchmark": BenchmarkResource(datasets_dir=str(datasets_dir))},
    )
    (check,) = [
        e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert not check.passed and check.metadata["promoted"].value is False
    materialised = {
        e.asset_key.to_user_string() for e in result.all_events if e.event_type_value == "ASSET_MATERIALIZATION"
    }
    assert materialised == {"closed_answer_model"}
    assert (model_folder(tmp_path, "closed_answer", staging=True) / ClosedAnswerModel.FILE).is_file()
    assert ClosedAnswerModel.load(LakeLayout(tmp_path).model("closed_answer")) is None  # what Retriever loads


def test_the_platform_benchmark_does_not_score_questions_that_trained_a_reader(datasets_dir) -> None:
    from ebm_platform.evaluation.report import gold_verdict, verdict_training_questions

    trained = verdict_training_questions(datasets_dir)
    pmid = pubmedqa_examples(datasets_dir)[0]["pmid"]
    row = {"source": "pubmedqa", "question_id": f"pubmedqa-PFP-{pmid}", "exact_answer": "yes"}
    assert f"pubmedqa:{pmid}" in trained and gold_verdict(row, trained) is None
    assert gold_verdict(row) == "yes"


def test_the_demo_report_names_the_reader_its_figures_and_how_often_it_says_maybe(
    tmp_path, datasets_dir, span_verdict
) -> None:
    from ebm_platform.cli.build import _reader_line
    from ebm_platform.evaluation.closed_training import train_closed_model
    from ebm_platform.lake_layout import LakeLayout

    assert _reader_line(tmp_path).startswith("Closed questions: the verdict read against the question's direction")
    model = train_closed_model(datasets_dir, span_verdict)
    model.save(LakeLayout(tmp_path).model("closed_answer"))
    line = _reader_line(tmp_path)
    report = model.meta["cross_validation"]
    assert f"learned {report['learned']['accuracy']:.3f} / {report['learned']['macro_f1']:.3f}" in line
    assert (
        f"it answers maybe {report['learned']['answers'].get('maybe', 0)} times; class weights maybe x "
        f"{model.weights['maybe']:g}, no x {model.weights['no']:g}" in line
    )
