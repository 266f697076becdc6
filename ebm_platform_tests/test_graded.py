"""Graded evidence: Cochrane reviews joined across their sets (grade B), guideline files cleaned and
sectioned with each recommendation's strength (grade A), grades from the source, bad input refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ebm_platform.bundled_model import wordpiece_words
from ebm_platform.conditions import load_catalogue
from ebm_platform.corpus.graded import GUIDELINE_SOURCES, cochrane_reviews, read_guideline, review_document
from ebm_platform.corpus.importers import import_dataset
from ebm_platform.corpus.landing import read_landing_file
from ebm_platform.corpus.model import DocumentError
from ebm_platform.corpus.pdf_text import (
    guideline_markdown,
    join_split_words,
    recommendations,
    remove_furniture,
    separate_glued_cells,
    stated_confidence,
)
from ebm_platform.corpus.windows import WindowParams, build_windows, sentence_spans
from ebm_platform.retrieval.findings import STRENGTH
from ebm_platform.settings import DEFAULT_CATALOGUE

WORDS = frozenset({"diagnosis", "imaging", "recommendation", "strong", "take", "addition", "evaluation"})


def test_split_words_are_joined_and_real_words_are_left_alone() -> None:
    text = "THE DIAGNOSI S of low back pain: a re commendation to avoid i maging. Stron g for. In addi tion, the cat"
    assert join_split_words(text, WORDS) == (
        "THE DIAGNOSIS of low back pain: a recommendation to avoid imaging. Strong for. In addition, the cat"
    )
    assert join_split_words("evidence -based and clinician-\ndirected care", WORDS) == (
        "evidence-based and clinician-directed care"
    )


def test_a_recurring_split_is_joined_when_the_whole_word_is_far_more_common() -> None:
    # the VA/DoD text splits "Nei ther" 3 times and "i nsufficient" 4 times but writes both whole 76-103 times:
    # recurring pieces that are not words of their own, so the strength "Neither for nor against" is found
    text = " ".join(["neither insufficient"] * 20 + ["(Nei ther for nor against), i nsufficient evidence"] * 3)
    joined = join_split_words(text, WORDS)
    assert "Nei ther" not in joined and joined.count("(Neither for nor against)") == 3
    assert "i nsufficient" not in joined and joined.count("insufficient evidence") == 3
    # a piece that stands alone about as often as the joined word is written out stays a word
    assert join_split_words(" ".join(["ther apy"] * 3 + ["therapy"] * 10), WORDS).count("ther apy") == 3


def test_a_word_hyphenated_where_its_line_broke_is_joined_and_a_compound_is_not() -> None:
    """The overview of low back pain guidelines came as "clini-cal guide-lines ... regard-ing informa-tion" (86 such
    words; the demo generated "What is the effect of informa-tion on effectiveness and health benefits?"); the
    VA/DoD and WHO guidelines' compounds ("follow-up", "non-specific", "self-care") stay hyphenated."""
    words = WORDS | {"clinical", "information", "regarding", "regard", "ing", "guide", "lines", "guidelines", "follow"}
    text = "Most guidelines agree. " * 6 + "The clini-cal guide-lines regard-ing informa-tion at follow-up differ."
    assert join_split_words(text, words).endswith("The clinical guidelines regarding information at follow-up differ.")
    # two words, neither written whole elsewhere: a compound
    assert join_split_words("guide-lines for self-care", words) == "guide-lines for self-care"


def test_running_header_and_page_marks_are_removed() -> None:
    pages = [
        f"Body text of page {n} says something different about topic {n * 7}. "
        f"Guideline for Back Pain February 2022 Page {n} of 9\n"
        for n in range(1, 9)
    ]
    clean = remove_furniture("Guideline for Back Pain\n" + "".join(pages), title="Guideline for Back Pain")
    assert "Page" not in clean and "February 2022" not in clean
    assert clean.count("Guideline for Back Pain") == 1  # the title stays where it first stands
    assert all(f"topic {n * 7}" in clean for n in range(1, 9))


def test_recommendations_keep_their_strength_and_drop_templates_and_repeats() -> None:
    text = (
        "Table 4 Strong for We recommend … Weak for We suggest … "
        "8. For patients with chronic low back pain, we suggest cognitive behavioral therapy. Weak for Reviewed, "
        "New-replaced 9. For patients with low back pain, we suggest a structured exercise program. Weak for "
        "Reviewed, New-replaced Discussion ... Recommendation 9.For patients with low back pain, we suggest a "
        "structured exercise program. (Weak for | Reviewed, New-replaced) "
        "B.1 Massage Massage may be offered as part of care to adults with CPLBP. (conditional recommendation "
        "in favour of use, very low certainty evidence)"
    )
    found = recommendations(text)
    assert [r.strength for r in found] == [
        "Weak for; New-replaced",
        "Weak for; New-replaced",
        "conditional recommendation in favour of use, very low certainty evidence",
    ]
    assert found[1].statement == "For patients with low back pain, we suggest a structured exercise program."
    assert found[2].statement.endswith("may be offered as part of care to adults with CPLBP.")


def test_a_recommendation_repeated_in_the_discussion_keeps_its_strength_in_its_sentence() -> None:
    text = (
        "9. For patients with low back pain, we suggest a structured exercise program (e.g., Pilates, tai chi). "
        "Weak for Reviewed, "
        "New-replaced The Work Group decided upon a Weak for recommendation. Recommendation 9.For patients "
        "with low back pain, we suggest a structured exercise program (e.g., Pilates, tai chi).k (Weak for | "
        "Reviewed, New-replaced ) Discussion Evidence suggests exercise improves pain in patients with LBP."
    )
    assert [r.repeat for r in recommendations(text, repeats=True)] == [False, True]
    markdown, found = guideline_markdown("Guideline", text, frozenset())
    assert found == 1 and markdown.count("## Recommendation") == 1
    assert "decided upon a Weak for recommendation" in markdown  # a strength named in passing stays as written
    running = markdown.rsplit("## Text", 1)[1]
    sentences = [running[a:b].strip() for a, b in sentence_spans(running)]
    quoted = next(s for s in sentences if "tai chi" in s)
    assert quoted == (
        "For patients with low back pain, we suggest a structured exercise program (e.g., Pilates, tai chi) "
        "(Strength of recommendation: Weak for; New-replaced)."
    )
    assert STRENGTH.search(quoted).group(1) == "Weak for"
    assert "Evidence suggests exercise improves pain" in sentences[-1] and ") )" not in running
    assert not sentences[-1].startswith("Discussion")  # the heading does not open the quoted sentence


def test_a_recommendation_carries_the_rating_of_the_evidence_its_discussion_states() -> None:
    """VA/DoD states a strength beside each recommendation and rates the evidence only in the
    discussion that repeats it: both copies carry that rating; a discussion that states none, or
    rates several things (shared by recommendations), gives none."""
    text = (
        "8. For patients with chronic low back pain, we suggest cognitive behavioral therapy. Weak for Reviewed, "
        "New-replaced 9. For patients with low back pain, we suggest a structured exercise program. Weak for "
        "Reviewed, New-replaced Recommendation 8.For patients with chronic low back pain, we suggest cognitive "
        "behavioral therapy. (Weak for | Reviewed, New-replaced) Discussion CBT helped. The Work Group’s "
        "confidence in the quality of the \nevidence was low . The body of evidence had limitations. "
        "Recommendation 9.For patients with low back pain, we suggest a structured exercise program. (Weak for | "
        "Reviewed, New-replaced) Discussion Trials used tai chi with moderate confidence in the quality of the "
        "evidence (no Work Group rating here)."
    )
    markdown, found = guideline_markdown("Guideline", text, frozenset())
    rated = "(Strength of recommendation: Weak for, the Work Group's confidence in the quality of the evidence: low; New-replaced)."
    assert found == 2 and markdown.count(rated) == 2  # the section and the discussion's copy
    assert "structured exercise program (Strength of recommendation: Weak for; New-replaced)." in markdown
    assert guideline_markdown("Overview", "Guidelines recommend exercise. " * 3, frozenset())[1] == 0  # none found
    assert (
        stated_confidence(
            "The Work Group's confidence in the quality of the evidence was moderate for acute LBP and low for chronic LBP."
        )
        == "low"
    )
    two = "The Work Group's confidence in the quality of the evidence was low. The Work Group's confidence in the quality of the evidence on qigong was very low."
    assert stated_confidence(two) is None and stated_confidence("Evidence was low in quality.") is None


def test_a_discussion_shared_by_recommendations_rates_each_by_its_number() -> None:
    """VA/DoD discusses recommendations 34 and 35 together and rates each after "evidence related to
    Recommendation N" (the PDF text splits "3 5"); a part that states no rating gives none."""
    table = (
        "34. For patients with chronic low back pain, we suggest acupuncture. Weak for Reviewed, Amended "
        "35. For patients with acute low back pain, there is insufficient evidence to recommend for or against "
        "acupuncture. Neither for nor against Reviewed, Amended "
        "36. For patients with low back pain, we suggest yoga. Weak for Reviewed, New-added "
    )
    discussion = (
        "Recommendation 34.For patients with chronic low back pain, we suggest acupuncture. (Weak for | Reviewed, "
        "Amended) 35.For patients with acute low back pain, there is insufficient evidence to recommend for or "
        "against acupuncture. (Neither for nor against | Reviewed, Amended) Discussion Acupuncture helped a little. "
        "The Work Group systematically reviewed evidence related to Recommendation 34 (200-202). The Work Group’s "
        "confidence in the quality of the evidence was low. The Work Group systematically reviewed evidence related "
        "to Recommendation 3 5 (200). The Work Group’s confidence in the quality of the evidence was very low. "
        "Recommendation 36.For patients with low back pain, we suggest yoga. (Weak for | Reviewed, New-added) "
        "Discussion The Work Group systematically reviewed evidence related to Recommendation 36 (12). Yoga helped."
    )
    markdown, found = guideline_markdown("Guideline", table + discussion, frozenset())
    label = "the Work Group's confidence in the quality of the evidence"
    assert found == 3
    assert markdown.count(f"acupuncture (Strength of recommendation: Weak for, {label}: low; Amended).") == 2
    assert markdown.count(f"(Strength of recommendation: Neither for nor against, {label}: very low; Amended).") == 2
    assert markdown.count("we suggest yoga (Strength of recommendation: Weak for; New-added).") == 2  # none stated


def _cochrane_sets(root: Path) -> Path:
    folder = root / "graded_evidence"
    for name in ("cochrane_auto", "cochrane_simplification", "cochrane_conclusions"):
        (folder / name).mkdir(parents=True)
    (folder / "cochrane_auto" / "val.json").write_text(
        json.dumps(
            [
                {
                    "doi": "10.1002/14651858.CD000001.pub2",
                    "name": "Exercise therapy for chronic low back pain",
                    "abstract": [
                        {"heading": "Main results", "text": "We included 249 trials. Exercise reduced pain."},
                        {"heading": "Authors' conclusions", "text": "Exercise probably reduces pain."},
                    ],
                },
                {"doi": "not a review doi", "name": "Broken", "abstract": []},
            ]
        ),
        encoding="utf-8",
    )
    simplification = folder / "cochrane_simplification"
    (simplification / "val.source").write_text(
        "Short results.\nTwelve trials of bracing for ankle sprain were included; bracing reduced re-injury.\n",
        encoding="utf-8",
    )
    (simplification / "val.doi").write_text(
        "10.1002/14651858.CD000001.pub2\n10.1002/14651858.CD000002\n", encoding="utf-8"
    )
    (folder / "cochrane_conclusions" / "dev-targets.csv").write_text(
        ",ReviewID,Target\n0,CD000002,Bracing probably prevents recurrent ankle sprain.\n"
        "1,CD000003,There is insufficient evidence for heel cups in plantar heel pain.\n",
        encoding="utf-8",
    )
    return folder


def test_cochrane_sets_join_on_the_review_number_and_keep_the_richest_text(tmp_path: Path) -> None:
    reviews, failed = cochrane_reviews(_cochrane_sets(tmp_path))
    assert sorted(reviews) == ["CD000001", "CD000002", "CD000003"]
    assert list(failed) == ["cochrane_auto/val.json#1"]
    first = review_document(reviews["CD000001"])  # the titled abstract beats the shorter paragraph
    assert first.title == "Exercise therapy for chronic low back pain" and "Exercise reduced pain" in first.text
    assert first.doi == "10.1002/14651858.CD000001.pub2" and first.grade == "B"
    assert first.study_design == "systematic review" and first.grade_basis.startswith("source:Cochrane")
    second = review_document(reviews["CD000002"])  # results from one set, conclusions from another
    assert "bracing reduced re-injury" in second.text and "## Authors' conclusions" in second.text
    # untitled: headed by the first sentence of its conclusions, not of its results
    assert second.title == "Cochrane systematic review CD000002: Bracing probably prevents recurrent ankle sprain"
    assert reviews["CD000002"].sets == ["cochrane_simplification", "cochrane_conclusions"]
    third = review_document(reviews["CD000003"])
    assert third.title.startswith("Cochrane systematic review CD000003: There is insufficient evidence")
    assert third.doi == "10.1002/14651858.CD000003"


def test_cochrane_import_lands_tagged_reviews_only_and_reports_the_broken_record(tmp_path: Path) -> None:
    _cochrane_sets(tmp_path)
    report = import_dataset("cochrane", tmp_path, tmp_path / "landing", load_catalogue(DEFAULT_CATALOGUE))
    assert report.failed == {"cochrane_auto/val.json#1": "no review number in its DOI, or no abstract text"}
    assert {c: dict(g) for c, g in report.per_condition.items()} == {"LAS": {"B": 1}, "LBP": {"B": 1}, "PHP": {"B": 1}}
    landed = read_landing_file(
        tmp_path / "landing" / "LAS" / "cochrane-CD000002.md", "LAS", load_catalogue(DEFAULT_CATALOGUE)
    )
    assert landed.grade == "B" and landed.doi == "10.1002/14651858.CD000002"


def test_a_guideline_file_without_a_source_entry_or_text_is_refused(tmp_path: Path) -> None:
    unknown = tmp_path / "cpg_unknown.xml"
    unknown.write_text("<page><title>x</title><url/><content>We recommend exercise.</content></page>")
    with pytest.raises(DocumentError, match="not a known guideline source"):
        read_guideline(unknown, WORDS)
    empty = tmp_path / next(iter(GUIDELINE_SOURCES))
    empty.write_text("<page><title>x</title><url/><content>  </content></page>")
    with pytest.raises(DocumentError, match="missing or empty"):
        read_guideline(empty, WORDS)
    empty.write_text("<page><title>x</title")
    with pytest.raises(DocumentError, match="not a <page> XML record"):
        read_guideline(empty, WORDS)


def test_the_va_dod_guideline_keeps_each_recommendation_with_its_strength_in_one_window(datasets_dir: Path) -> None:
    path = datasets_dir / "graded_evidence" / "guidelines_lbp" / "cpg_va-department_of_defense.xml"
    document = read_guideline(path, wordpiece_words())
    assert document.grade == "A" and document.study_design == "guideline" and document.year == 2022
    assert "DIAGNOSI S" not in document.text and "Page 22 of 141" not in document.text
    exercise = "For patients with low back pain, we suggest a structured clinician-directed exercise program"
    windows = build_windows(document.doc_id, document.text, WindowParams(), lambda blocks: list(range(len(blocks))))
    holding = [w for w in windows if exercise in w["text"] and "> Recommendation" in w["section"]]
    assert len(holding) == 1
    text = holding[0]["text"]
    quotable = [text[a:b] for a, b in sentence_spans(text)]  # the sentence an answer quotes carries the strength
    rated = "(Strength of recommendation: Weak for, the Work Group's confidence in the quality of the evidence: very low; New-replaced)."
    assert any(exercise in s and s.endswith(rated) for s in quotable)  # the rating its discussion states
    assert sum("> Recommendation" in w["section"] for w in windows) >= 40


def test_table_cells_run_together_by_the_pdf_extraction_are_separated():
    """The WHO guideline's table runs its intervention column into its recommendation column."""
    glued = (
        "B.1 Structured exercise therapies or programmesA structured exercise therapy may be offered. "
        "B.2 Needling therapies (dry needling modalities)Needling therapies such as acupuncture may be offered. "
        "C.3 Cognitive therapyThe balance between the benefits and harms is uncertain. "
        "Opioid analgesicsOpioid analgesics should not be used."
    )
    assert separate_glued_cells(glued) == (
        "B.1 Structured exercise therapies or programmes. A structured exercise therapy may be offered. "
        "B.2 Needling therapies (dry needling modalities). Needling therapies such as acupuncture may be offered. "
        "C.3 Cognitive therapy. The balance between the benefits and harms is uncertain. "
        "Opioid analgesics. Opioid analgesics should not be used."
    )
    kept = "McKenzie and IgA levels, HbA1c, mmHg and pH; a CD000335 review. A trial (n = 40). The end."
    assert separate_glued_cells(kept) == kept
