"""Benchmark generation (stages 1-3) in both modes, on paragraphs of a real Evidence Inference article."""

from __future__ import annotations

import json

import polars as pl
import pytest

from ebm_platform.benchmark.generation import (
    QuestionGenerator,
    anchored_finding,
    askable,
    compose_question,
    concise,
    grounded,
    ideal_answer,
    offline_question,
    offline_relation,
    result_sentence,
    sample_windows,
    window_extraction,
)
from ebm_platform.corpus.readers import read_jats
from ebm_platform.corpus.windows import split_blocks
from ebm_platform.graph.extraction import entities_by_window, to_elements
from ebm_platform.graph.pico_rules import Extraction
from ebm_platform.llm.client import LLMClient
from ebm_platform.retrieval.findings import is_finding, states_about
from ebm_platform.vocabulary import Anchors
from ebm_platform_tests.conftest import ScriptedServer

ARTICLE = "PMC2907397"


@pytest.fixture(scope="module")
def windows(datasets_dir) -> pl.DataFrame:
    """The article's paragraphs as grade-B windows with their section paths (real text, no model
    needed to cut them)."""
    path = (
        next((datasets_dir / "evidence_inference" / "xml").glob(f"{ARTICLE}*.nxml"), None)
        or sorted((datasets_dir / "evidence_inference" / "xml").glob("*.nxml"))[0]
    )
    doc = read_jats(path.read_bytes(), path.name)
    paragraphs = [b for b in split_blocks(doc.text) if len(b.text) > 200 and b.kind == "paragraph"]
    return pl.DataFrame(
        {
            "window_id": [f"w{n}" for n in range(len(paragraphs))],
            "doc_id": ["doc"] * len(paragraphs),
            "grade": ["B"] * len(paragraphs),
            "section": [b.section for b in paragraphs],
            "text": [b.text for b in paragraphs],
        }
    )


def _reply(data: dict) -> str:
    return "content:" + json.dumps(data)


def test_offline_generation_is_grounded_and_says_so(windows):
    ids = windows["window_id"].to_list()
    generator = QuestionGenerator(LLMClient(), lambda q, n: ids[:n], is_finding, states_about)
    rows = generator.rows("PFP", windows, per_grade=2)
    assert rows.height >= 1 and generator.log.mode.startswith("offline")
    text = dict(zip(ids, windows["text"].to_list()))
    section = dict(zip(ids, windows["section"].to_list()))
    for row in rows.iter_rows(named=True):
        for key in ("gold_p", "gold_i", "gold_c", "gold_o", "gold_t"):
            assert row[key] is None or grounded(row[key], text[row["seed_window_id"]])
        assert row["gold_window_ids"][0] == row["seed_window_id"]
        assert is_finding(row["exact_answer"], section[row["seed_window_id"]])
    assert sum(generator.log.relations.values()) > 0


def test_llm_generation_drops_ungrounded_fields_and_uses_graded_gold(windows, tmp_path):
    seed, found = sample_windows(windows, 1, 7, is_finding)[0]
    intervention, outcome = found.names("Intervention")[0], found.names("Outcome")[0]
    pool = [w for w in windows["window_id"].to_list() if w != seed["window_id"]][:2]
    server = ScriptedServer()
    server.script = [
        _reply(
            {
                "question": f"Does {intervention} change {outcome}?",
                "picot": {
                    "p": "elite marathon runners over ninety",
                    "i": intervention,
                    "c": None,
                    "o": outcome,
                    "t": None,
                },
                "exact_answer": "It did.",
                "certainty": "uncertain",
                "nuggets": [
                    {"fact": "Effect observed", "importance": "vital"},
                    {"fact": "Small sample", "importance": "okay"},
                ],
            }
        ),
        _reply({"grades": [{"n": 1, "relation": "supportive"}, {"n": 2, "relation": "weakly related"}]}),
    ]
    try:
        client = LLMClient(
            model="openai/test-model",
            api_base=server.base,
            api_key="k",
            timeout_s=5,
            max_retries=0,
            cache_path=tmp_path / "cache.sqlite",
        )
        generator = QuestionGenerator(client, lambda q, n: [seed["window_id"], *pool], is_finding, states_about)
        rows = generator.rows("PFP", windows.filter(pl.col("window_id").is_in([seed["window_id"], *pool])), 1)
    finally:
        server.close()
    row = rows.row(0, named=True)
    assert row["gold_p"] is None and generator.log.ungrounded_fields_dropped == 1
    assert (row["gold_i"], row["gold_o"], row["certainty"]) == (intervention, outcome, "uncertain")
    assert row["gold_window_ids"] == [seed["window_id"], pool[0]]
    assert row["nuggets_vital"] == ["Effect observed"] and row["nuggets_okay"] == ["Small sample"]
    assert row["split_kind"] == "main" and generator.log.mode == "llm:openai/test-model"
    assert seed["text"][:80] in server.prompts[0] and "Reference answer: It did." in server.prompts[1]


def test_llm_question_without_grounded_intervention_or_valid_json_is_rejected(windows, tmp_path):
    server = ScriptedServer()
    server.script = [
        _reply(
            {
                "question": "Does acupuncture help?",
                "picot": {"i": "acupuncture needles xyz", "o": "pain"},
                "exact_answer": "Yes, it helps.",
                "certainty": "sufficient",
                "nuggets": [],
            }
        ),
        "malformed",
    ]
    try:
        client = LLMClient(model="openai/test-model", api_base=server.base, api_key="k", timeout_s=5, max_retries=0)
        generator = QuestionGenerator(client, lambda q, n: [], is_finding, states_about)
        first = generator.rows("PFP", windows, per_grade=1)
        second = generator.rows("PFP", windows, per_grade=1, seed=8)  # a malformed answer: counted, not fatal
    finally:
        server.close()
    assert first.height == 0 and second.height == 0
    assert generator.log.rejected["no grounded intervention or outcome"] == 1
    assert sum(n for reason, n in generator.log.rejected.items() if reason.startswith("no valid model answer")) == 1


def test_offline_relation_reads_the_findings_not_the_topic():
    """Stage 3 offline: a finding about the intervention and the outcome is gold (strongly so when the
    window names the population); a methods paragraph on the same intervention and outcome, however
    close in wording, is only weakly related."""
    review = {
        "section": "Exercise therapy for treatment of non-specific low back pain > Authors' conclusions",
        "text": "Exercise therapy appears to be slightly effective at decreasing pain and improving function in "
        "adults with chronic low back pain, particularly in health care populations.",
    }
    methods = {
        "section": "A trial of exercise in low back pain > Methods > Interventions",
        "text": "Participants in the exercise therapy group attended twelve sessions; pain was measured on a "
        "visual analogue scale at baseline and after eight weeks.",
    }
    other = {"section": "Taping for ankle sprain > Results", "text": "Taping reduced re-injury rates (p = 0.03)."}
    anchors = Anchors(population="adults with chronic low back pain", intervention="exercise therapy", outcome="pain")
    assert offline_relation(review, anchors, is_finding, states_about) == "strongly supportive"
    runners = Anchors(population="elite marathon runners", intervention="exercise therapy", outcome="pain")
    assert offline_relation(review, runners, is_finding, states_about) == "supportive"
    assert offline_relation(methods, anchors, is_finding, states_about) == "weakly related"
    assert offline_relation(other, anchors, is_finding, states_about) == "unrelated"
    manual = Anchors(intervention="manual therapy", outcome="pain")  # the review names no manual therapy
    assert offline_relation(review, manual, is_finding, states_about) == "weakly related"


def test_offline_questions_are_made_of_concise_names():
    """A tagger span that runs on into a sentence is no PICOT field: the question takes the next name that
    is short enough, or leaves the field out."""
    found = Extraction()
    found.add_entity("Subjects] From among 120 male and female students, 22 whose thoraxes opened", "Population")
    found.add_entity("deep abdominal muscle strengthening exercises", "Intervention")
    found.add_entity("respiratory function, lumbar stability, pain, disability and quality of life", "Outcome")
    found.add_entity("lumbar stability", "Outcome")
    question, fields = compose_question(found)
    assert fields["p"] is None and fields["o"] == "lumbar stability"
    assert question == "What is the effect of deep abdominal muscle strengthening exercises on lumbar stability?"
    only_long = Extraction()
    only_long.add_entity("a home exercise programme of twelve weeks with weekly phone calls", "Intervention")
    assert concise(only_long.names("Intervention")) is None


def test_an_offline_question_names_no_population_that_its_other_fields_name_or_that_is_malformed():
    """A population that repeats the outcome ("... on pain in pain?") or names a body site alone gives way to the
    condition (here none that the question does not name already); a pronoun, a citation, a name cut mid-phrase
    and a table's cell are no field at all."""
    found = Extraction()
    found.add_entity("pain", "Population")
    found.add_entity("coffee", "Intervention")
    found.add_entity("pain", "Outcome")
    found.add_entity("pain", "Condition")
    assert compose_question(found)[0] == "What is the effect of coffee on pain?"
    found.add_entity("knee osteoarthritis", "Condition")
    assert compose_question(found)[0] == "What is the effect of coffee on pain in knee osteoarthritis?"
    trial = {"section": "A trial > Results", "grade": "C"}
    for name in ("There", "these patients", "Kon et al19", "sacroiliitis58", "patients with knee OA following"):
        assert not askable(name, "Population", trial), name
    assert not askable("rescue medication |", "Intervention", trial)
    for name in ("patients with chronic neck pain", "adults aged 65 and over", "IL6"):
        assert askable(name, "Population", trial), name
    at_a_site = Extraction()
    at_a_site.add_entity("neck", "Population")
    at_a_site.add_entity("massage", "Intervention")
    at_a_site.add_entity("pain", "Outcome")
    assert compose_question(at_a_site)[0] == "What is the effect of massage on pain?"


def test_an_offline_question_asks_what_its_answer_answers():
    """The question is composed from the names that its exact answer states: the window's strongest finding
    that names an intervention and an outcome of the window, not its strongest finding of any kind beside
    names from elsewhere in the window; a window none of whose findings names both seeds no question."""
    window = {
        "window_id": "t1",
        "doc_id": "t",
        "grade": "C",
        "section": "Core stability in chronic low back pain > Results",
        "text": "Body mass index was significantly lower in the waiting-list group (p < 0.05). Stabilization "
        "exercises reduced pain intensity significantly more than general exercise (p < 0.001).",
    }
    found = Extraction()
    for name, type_ in [
        ("holistic care", "Intervention"),
        ("stabilization exercises", "Intervention"),
        ("body mass index", "Outcome"),
        ("pain intensity", "Outcome"),
        ("general exercise", "Comparator"),
    ]:
        found.add_entity(name, type_)
    assert result_sentence(window, is_finding).startswith("Body mass index")  # the strongest finding of any kind
    answer, narrowed = anchored_finding(window, found, is_finding)
    assert answer.startswith("Stabilization exercises") and "holistic care" not in narrowed.names("Intervention")
    asked = offline_question(window, found, is_finding)
    assert asked["exact_answer"] == answer
    assert asked["question"] == (
        "What is the effect of stabilization exercises compared with general exercise on pain intensity?"
    )
    sampled = sample_windows(pl.DataFrame([window]), 1, 7, is_finding, {"t1": found.entities})
    assert [narrowed.names("Outcome") for _, narrowed in sampled] == [["pain intensity"]]
    unanchored = Extraction()
    unanchored.add_entity("holistic care", "Intervention")
    unanchored.add_entity("pain intensity", "Outcome")
    assert anchored_finding(window, unanchored, is_finding) is None
    background = dict(window, text="Holistic care for pain intensity was given. " + window["text"].split(". ")[0] + ".")
    assert not sample_windows(pl.DataFrame([background]), 1, 7, is_finding, {"t1": unanchored.entities})
    assert sample_windows(pl.DataFrame([window]), 1, 7, is_finding, {"t1": unanchored.entities})  # the rules name it


def test_sampling_takes_one_window_per_document_before_a_second(windows):
    """One article's windows and copies of two of them filed as other documents: three picks span all three."""
    eligible = [w for w, _ in sample_windows(windows, windows.height, 7, is_finding)]
    assert len(eligible) >= 3
    copies = pl.DataFrame(
        [{**w, "window_id": f"copy{n}-w1", "doc_id": f"copy{n}"} for n, w in enumerate(eligible[:2])],
        schema=windows.schema,
    )
    picked = sample_windows(pl.concat([windows, copies]), 3, 7, is_finding)
    assert len({w["doc_id"] for w, _ in picked}) == 3


def test_questions_come_from_findings_not_background(windows):
    """A window of background or methods seeds no question (the article's statistical-analysis
    paragraphs name an intervention, an outcome and "significant"), and a gold window adds its
    finding (or nothing) to the reference answer, never its methods."""
    sampled = [w for w, _ in sample_windows(windows, windows.height, 7, is_finding)]
    assert sampled and all(result_sentence(w, is_finding) for w in sampled)
    methods = [w for w in windows.iter_rows(named=True) if " > Methods" in w["section"]]
    assert methods and not {w["window_id"] for w in methods} & {w["window_id"] for w in sampled}
    by_id = {w["window_id"]: w for w in windows.iter_rows(named=True)}
    seed = sampled[0]
    ideal = ideal_answer("The answer.", seed, [seed["window_id"], methods[0]["window_id"]], by_id, is_finding)
    assert ideal == f"(grade B) The answer. [{seed['window_id']}]"


# a systematic review's result (the demo's multidisciplinary rehabilitation review), whose outcome the rules miss
REVIEW_RESULT = (
    "In MBR compared to usual care for subacute LBP, individuals receiving MBR had less pain (four studies with "
    "336 participants; SMD -0.46, 95% CI -0.70 to -0.21, moderate-quality of evidence due to risk of bias)."
)


def test_stage_one_reads_the_graphs_extraction_first_and_only_grounded_names():
    """The knowledge graph's entities (the learned tagger's spans) give a review's result the outcome the
    rules miss, so it seeds a question; a name that is not in the window is never used."""
    window = {"window_id": "r1", "doc_id": "r", "grade": "B", "section": "Review > Main results", "text": REVIEW_RESULT}
    graph = [
        {"name": "spinal cord stimulation", "type": "Intervention"},  # not in the window
        {"name": "MBR", "type": "Intervention"},
        {"name": "pain", "type": "Outcome"},
    ]
    assert not window_extraction(window).names("Outcome")  # the rules alone
    found = window_extraction(window, graph)
    assert found.names("Intervention")[0] == "MBR" and found.names("Outcome")[0] == "pain"
    assert "spinal cord stimulation" not in found.names("Intervention")
    # as benchmark_qa reads them: pico_extractions' element rows back to each window's entities
    elements = pl.DataFrame(to_elements("r1", "r", {"entities": graph, "relations": [], "attributes": []}))
    assert entities_by_window(elements) == {"r1": graph} and entities_by_window(pl.DataFrame()) == {}
    frame = pl.DataFrame([window])
    assert not sample_windows(frame, 1, 7, is_finding)
    picked = sample_windows(frame, 1, 7, is_finding, entities_by_window(elements))
    assert [w["window_id"] for w, _ in picked] == ["r1"]


def _window(grade: str, section: str, text: str) -> dict:
    """One window of a document of that grade, its section path the document's title first."""
    return {"window_id": f"{grade}1", "doc_id": grade, "grade": grade, "section": section, "text": text}


def _offline_fields(window: dict, *entities: tuple[str, str]) -> dict:
    """The PICOT fields of the offline question composed from the window and these (name, type) graph entities."""
    graph = [{"name": name, "type": type_} for name, type_ in entities]
    return offline_question(window, window_extraction(window, graph), is_finding)["picot"]


def test_a_question_asks_about_care_not_about_its_evidence_or_its_guideline():
    """An outcome made of evidence-rating words and an intervention that names a kind of source or a guideline's
    issuer are not a question's fields (the demo asked "What is the effect of CBT on quality?" and "What is the
    effect of VA/DoD compared with placebo on pain?")."""
    review = _window(
        "B",
        "Cognitive-behavioural treatment for subacute and chronic neck pain > Main results",
        "There was moderate quality evidence that CBT was better than other interventions for improving "
        "kinesiophobia at intermediate-term follow-up (SMD -0.39, 95% CI -0.69 to -0.08, I2 = 0%).",
    )
    fields = _offline_fields(review, ("CBT", "Intervention"), ("quality", "Outcome"), ("kinesiophobia", "Outcome"))
    assert fields["o"] == "kinesiophobia"
    guideline = _window(
        "A",
        "VA/DoD Clinical Practice Guideline for the Diagnosis and Treatment of Low Back Pain > Text",
        "The two individual RCTs provide moderate to low quality evidence demonstrating no difference between "
        "opioids and placebo for pain or function.",
    )
    fields = _offline_fields(
        guideline,
        ("VA/DoD", "Intervention"),
        ("RCTs", "Intervention"),
        ("opioids", "Intervention"),
        ("placebo", "Comparator"),
        ("pain", "Outcome"),
    )
    assert (fields["i"], fields["c"], fields["o"]) == ("opioids", "placebo", "pain")
    assert askable("Diagnosis", "Comparator", guideline)  # a word of the title after "guideline" names no issuer
    for issuer in ("VA/DoD", "VA/DoD LBP CPG", "DoD LBP CPG"):
        assert not askable(issuer, "Intervention", guideline)
    assert askable("clinical examination", "Intervention", guideline)  # "Clinical Practice" names no issuer
    assert askable("VA/DoD", "Intervention", {**guideline, "grade": "C"})  # a trial's title names its treatment
    for outcome in ("quality of life", "sleep quality", "strength", "pain"):
        assert askable(outcome, "Outcome", review)
    for outcome in ("quality", "low quality evidence", "certainty of the evidence", "values and preferences"):
        assert not askable(outcome, "Outcome", review)


def test_a_question_names_what_was_given_and_measured_not_how_much_or_when():
    """Names made only of counts, times, statistics, groups, care in general, a body site or an outcome instrument are
    not a question's intervention (the demo asked "What is the effect of two treatment ...", "... of mean treatment
    compared with placebo ...", "... of Low on Physical impairment?", "... of SPADI on adhesive capsulitis?", "... of
    posterior on translation?", "... compared with type of acupuncture) versus usual care ..."), nor
    such an outcome ("... on Time?", "... of surgery on Improvement?"); the finding's next name is asked instead."""
    trial = _window(
        "C",
        "Mechanical traction for low back pain > Results",
        "Mean pain scores fell more with mechanical lumbar traction than at baseline (p = 0.01) at two weeks.",
    )
    fields = _offline_fields(
        trial, ("low", "Intervention"), ("mechanical lumbar traction", "Intervention"), ("pain", "Outcome")
    )
    assert (fields["i"], fields["o"]) == ("mechanical lumbar traction", "pain")
    for name in (
        "two treatment",
        "mean treatment",
        "pre- treatment",
        "Time",
        "Low back",
        "lumbar",
        "combination",
        "groups following treatment",
        "SPADI",
        "KOOS-pain",
        "EuroQoL-5D",
        "η2",
        "oral",
        "Control",
        "posterior",
        "type of acupuncture) versus usual care",
    ):
        assert not askable(name, "Intervention", trial), name
    for name in (
        "oral steroid",
        "topical diclofenac",
        "conservative treatment",
        "PRP",
        "TENS",
        "Tai Chi",
        "posterior glide",
    ):
        assert askable(name, "Intervention", trial), name
    for name in ("usual care", "placebo", "sham", "no treatment", "conservative treatment"):
        assert askable(name, "Comparator", trial), name
    assert not askable("placebo", "Intervention", trial)
    # ... nor a time or a direction alone ("What is the effect of stabilization exercise on pretreatment?", "... of
    # diclofenac compared with placebo on reductions?", 2026-12-07)
    for name in ("Time", "Improvement", "events", "2 weeks", "pretreatment", "reductions", "postoperative"):
        assert not askable(name, "Outcome", trial), name
    for name in ("pain", "mean VAS score", "FEV1", "disc height", "quality of life"):
        assert askable(name, "Outcome", trial), name


def test_a_questions_arms_differ_its_outcome_is_no_arm_and_its_population_names_someone():
    """The demo asked "What is the effect of Epley compared with Epley ...?", "... of massage on massage in
    participants?", "... of paracetamol compared with placebo on adverse events in Seventeen?" and "... of
    gabapentin on risk?": a comparator that names nothing the intervention does not, an outcome that names only
    the arms or nothing measured, and a population that names a count or a source instead of people are left out
    (for the condition the finding names)."""
    trial = _window(
        "C",
        "Massage for low back pain > Results",
        "Massage reduced pain more than placebo massage in participants (p = 0.01); massage in Seventeen "
        "participants improved function.",
    )
    fields = _offline_fields(
        trial,
        ("massage", "Intervention"),
        ("massage", "Comparator"),
        ("placebo massage", "Comparator"),
        ("massage", "Outcome"),
        ("pain", "Outcome"),
        ("participants", "Population"),
    )
    assert (fields["i"], fields["c"], fields["o"], fields["p"]) == (
        "massage",
        "placebo massage",
        "pain",
        "participants",
    )
    fields = _offline_fields(trial, ("massage", "Intervention"), ("function", "Outcome"), ("Seventeen", "Population"))
    assert (fields["o"], fields["p"]) == ("function", None)
    risk = _window(
        "A", "Guideline > Recommendations", "Gabapentin increased the risk of respiratory depression (p < 0.05)."
    )
    fields = _offline_fields(
        risk, ("gabapentin", "Intervention"), ("risk", "Outcome"), ("respiratory depression", "Outcome")
    )
    assert fields["o"] == "respiratory depression"
    # a count or a source is no population: the condition the finding names takes its place
    review = _window(
        "B",
        "Oral steroids for adhesive capsulitis > Main results",
        "In adhesive capsulitis, oral steroid reduced pain more than placebo in one trial (p = 0.01).",
    )
    fields = _offline_fields(
        review,
        ("oral steroid", "Intervention"),
        ("placebo", "Comparator"),
        ("pain", "Outcome"),
        ("one trial", "Population"),
        ("adhesive capsulitis", "Condition"),
    )
    assert (fields["p"], fields["o"]) == ("adhesive capsulitis", "pain")
