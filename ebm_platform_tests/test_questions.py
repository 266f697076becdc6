"""Question parsing: a clinical question's anchors in the phrasings clinicians use, and its evaluation."""

import json

import polars as pl
import pytest

from ebm_platform.benchmark.evidence_inference import labelled_prompts
from ebm_platform.cli import main
from ebm_platform.evaluation.question_eval import HELD_OUT, PHRASINGS, evaluate_questions, phrase
from ebm_platform.evaluation.retrieval_eval import questions
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.retrieval.sr_rag import question_condition

# (question, intervention, comparator, outcome, population, timepoint)
CASES = [
    (
        "Does eccentric exercise reduce pain in patellar tendinopathy compared with usual care?",
        "eccentric exercise",
        "usual care",
        "pain",
        None,
        None,
    ),
    (
        "In adults with low back pain, is yoga better than stretching for disability at 12 weeks?",
        "yoga",
        "stretching",
        "disability",
        "adults with low back pain",
        "12 weeks",
    ),
    (
        "Does manual therapy versus exercise improve function in knee osteoarthritis?",
        "manual therapy",
        "exercise",
        "function",
        None,
        None,
    ),
    (
        "Compared with placebo, does naproxen change pain scores in runners at 6 weeks?",
        "naproxen",
        "placebo",
        "pain scores",
        "runners",
        "6 weeks",
    ),
    (
        "What is the effect of brief therapy on physical function in patients with non-arthritic, intra-articular hip pain?",
        "brief therapy",
        None,
        "physical function",
        "patients with non-arthritic, intra-articular hip pain",
        None,
    ),
    (
        "Does supervised cycling result in better gait compared to no supervised therapy?",
        "supervised cycling",
        "no supervised therapy",
        "gait",
        None,
        None,
    ),
    (
        "Is there a significant difference in hop distance between bracing and taping?",
        "bracing",
        "taping",
        "hop distance",
        None,
        None,
    ),
    (
        "Which is better for plantar heel pain, shockwave therapy or insoles?",
        "shockwave therapy",
        "insoles",
        "plantar heel pain",
        None,
        None,
    ),
    (
        "What is the effect of losartan 50 mg once daily compared with captopril on mortality?",
        "losartan 50 mg once daily",
        "captopril",
        "mortality",
        None,
        None,
    ),
    # 'on' inside the intervention: the outcome starts after the comparator
    (
        "What is the effect of a workshop on EBM compared with usual teaching on confidence scores?",
        "workshop on EBM",
        "usual teaching",
        "confidence scores",
        None,
        None,
    ),
    # a guideline's question: the recommender and the verb frame it
    (
        "Should clinicians suggest a structured exercise program for patients with low back pain?",
        "structured exercise program",
        None,
        None,
        "patients with low back pain",
        None,
    ),
    # the population as the closed question's subject
    (
        "Should patients with chronic low back pain take opioids?",
        "opioids",
        None,
        None,
        "patients with chronic low back pain",
        None,
    ),
    # the subject's verb is the intervention itself: it stays with it, the population is the subject
    (
        "Should patients with acute low back pain stay in bed?",
        "stay in bed",
        None,
        None,
        "patients with acute low back pain",
        None,
    ),
    ("Should adults with chronic neck pain exercise?", "exercise", None, None, "adults with chronic neck pain", None),
    (
        "Should athletes with an ankle sprain be immobilised?",
        "immobilised",
        None,
        None,
        "athletes with an ankle sprain",
        None,
    ),
    # "than" before a number is a quantity, not a comparator (PubMedQA: "... for adrenal masses larger than 7 cm?")
    (
        "Is exercise more effective than rest in patients older than 65 years?",
        "exercise",
        "rest",
        None,
        "patients older than 65 years",
        None,
    ),
    (
        "Does exercise reduce pain in patients with pain for more than 3 months?",
        "exercise",
        None,
        "pain",
        "patients with pain for more than 3 months",
        None,
    ),
    # "lower" of the body is no verb (the demo read the intervention "insoles effective for preventing")
    (
        "Are insoles effective for preventing lower limb stress fractures?",
        "insoles",
        None,
        "limb stress fractures",
        None,
        None,
    ),
    ("Do statins lower cholesterol?", "statins", None, "cholesterol", None, None),
]


@pytest.mark.parametrize("question, intervention, comparator, outcome, population, timepoint", CASES)
def test_question_anchors_read_each_phrasing(question, intervention, comparator, outcome, population, timepoint):
    a = question_anchors(question)
    assert (a.intervention, a.comparator, a.outcome, a.population, a.timepoint) == (
        intervention,
        comparator,
        outcome,
        population,
        timepoint,
    )
    assert a.terms == [
        v for v in (a.population, a.intervention, a.comparator, a.outcome, a.timepoint, a.condition) if v
    ]


def test_question_anchors_never_invent_missing_fields():
    a = question_anchors(
        "In adults with patellofemoral pain, does adding hip strengthening to knee exercise "
        "reduce pain more than knee exercise alone?",
        ("patellofemoral pain",),
    )
    assert a.population == "adults with patellofemoral pain" and a.condition == "patellofemoral pain"
    assert "hip strengthening" in a.intervention and a.comparator == "knee exercise alone"
    assert a.timepoint is None
    title = question_anchors("Clinical identifiers for adhesive capsulitis: are we seeing the real picture?")
    assert (title.intervention, title.comparator, title.outcome) == (None, None, None)  # a title, not a question
    bare = question_anchors("Is ice useful?")
    assert (bare.intervention, bare.population, bare.comparator, bare.outcome, bare.timepoint) == (
        "ice",
        None,
        None,
        None,
        None,
    )


def test_the_condition_is_its_own_anchor_not_part_of_the_outcome():
    a = question_anchors("Does eccentric exercise reduce pain in patellar tendinopathy?", ("patellar tendinopathy",))
    assert (a.outcome, a.condition) == ("pain", "patellar tendinopathy")


def test_question_evaluation_scores_the_parser_above_the_whole_question(datasets_dir, capsys):
    report = evaluate_questions(datasets_dir, "validation", limit=40)
    assert report["prompts"] == 40 and set(report["phrasings"]) == set(PHRASINGS) | set(HELD_OUT)
    for group in ("development", "held_out"):
        summary = report["summary"][group]
        assert summary["parser"]["mean"] > summary["whole question"]["mean"] + 0.3
        low, high = summary["parser"]["interval_95"]
        assert low <= summary["parser"]["mean"] <= high
    assert report["phrasings"]["effect-of"]["parser"]["intervention"] > 0.9
    assert main(["eval", "questions", "--limit", "10", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["prompts"] == 10


def test_a_phrasing_renders_a_prompt_and_an_unknown_one_fails_before_any_lake_is_built(lake, capsys):
    prompt = {"intervention": "naproxen", "comparator": "placebo", "outcome": "pain"}
    assert phrase(prompt, "better-than") == "Is naproxen better than placebo for pain?"
    assert (
        phrase(prompt, "outcome-differ", " at 6 weeks") == "Does pain differ between naproxen and placebo at 6 weeks?"
    )
    with pytest.raises(ValueError, match="unknown phrasing"):
        phrase(prompt, "worse-than")
    assert main(["eval", "retrieval", "--benchmark", "evidence-inference", "--phrasing", "worse-than"]) == 2
    assert main(["eval", "answers", "--benchmark", "pubmedqa", "--phrasing", "better-than"]) == 2
    err = capsys.readouterr().err
    assert "unknown phrasing" in err and "--phrasing applies to evidence-inference" in err
    assert not (lake / "eval").exists()


def test_evaluation_questions_take_the_phrasing_the_template_otherwise(datasets_dir, tmp_path):
    rows = [
        r
        for r in labelled_prompts(datasets_dir, "validation").head(20).iter_rows(named=True)
        if any(len(e) > 20 for e in r["evidence"])
    ][:3]
    windows = tmp_path / "assets" / "evidence_windows"
    windows.mkdir(parents=True)
    pl.DataFrame(
        {
            "window_id": [f"w{i}" for i in range(len(rows))],
            "source": [f"evidence_inference:{r['pmcid']}" for r in rows],
            "text": [max(r["evidence"], key=len) for r in rows],
        }
    ).write_parquet(windows / "ALL.parquet")
    template, _ = questions("evidence-inference", "validation", datasets_dir, tmp_path)
    phrased, _ = questions("evidence-inference", "validation", datasets_dir, tmp_path, "better-than")
    by_id = {q["id"]: q for q in phrased}
    assert {q["id"] for q in template} == set(by_id) and len(template) >= 1
    for a in template:
        b = by_id[a["id"]]
        assert a["question"].startswith("What is the effect of ") and b["question"].startswith("Is ")
        assert " better than " in b["question"] and a["gold"] == b["gold"] and a["label"] == b["label"]
    swapped = {
        "significantly increased": "significantly decreased",
        "significantly decreased": "significantly increased",
        "no significant difference": "no significant difference",
    }
    exchanged = {
        q["id"]: q for q in questions("evidence-inference", "validation", datasets_dir, tmp_path, "arms-exchanged")[0]
    }
    by_prompt = {f"ei-{r['prompt_id']}": r for r in rows}
    for a in template:
        row = by_prompt[a["id"]]
        c = exchanged[a["id"]]  # the comparator asked about first, and the label swapped with it
        assert (
            c["question"]
            == f"What is the effect of {row['comparator']} compared with {row['intervention']} on {row['outcome']}?"
        )
        assert c["label"] == swapped[a["label"]] and c["gold"] == a["gold"]


def test_the_question_condition_is_found_by_catalogue_name_then_by_its_terms():
    """The demo's "... for lateral epicondylitis?" named no catalogue condition (Lateral elbow tendinopathy)
    and was answered from a low back pain guideline; "lateral epicondyl" is one of that condition's terms."""
    ask = "Is platelet-rich plasma better than corticosteroid injection for lateral epicondylitis?"
    assert question_condition(question_anchors(ask), None) == "LET"
    assert question_condition(question_anchors(ask), ["NP"]) == "NP"  # the one asked for
    assert question_condition(question_anchors("Does exercise reduce pain?"), None) is None
