from pathlib import Path

import pytest

from ebm_platform.conditions import CatalogueError, load_catalogue
from ebm_platform.corpus.tagging import tag_conditions
from ebm_platform.settings import DEFAULT_CATALOGUE, EVALUATION_CATALOGUE

PAPER_CODES = [
    "GL-GEN",
    "GL-SP",
    "ACL",
    "AT",
    "BSI",
    "FS",
    "GPA",
    "GTPS",
    "HSI",
    "IS",
    "LAS",
    "LBP",
    "ITBS",
    "LET",
    "MACL",
    "MTSS",
    "NAHJP",
    "NP",
    "PHP",
    "PFP",
    "PT",
    "RCRSP",
    "FTASD",
]


def test_default_catalogue_is_the_papers_23_codes():
    catalogue = load_catalogue(DEFAULT_CATALOGUE)
    assert catalogue.codes == PAPER_CODES
    assert catalogue.canonical("ACSM") == "GL-GEN"
    assert catalogue.canonical("ACSM_pedCR") == "GL-SP"
    with pytest.raises(KeyError):
        catalogue.canonical("XYZ")


def test_tagging_uses_title_abstract_and_body_hits():
    catalogue = load_catalogue(DEFAULT_CATALOGUE)
    assert tag_conditions(catalogue, "Hip strengthening for patellofemoral pain", "", "", "C") == ["PFP"]
    body = "achilles tendon " * 3
    assert tag_conditions(catalogue, "A trial", "exercise", body, "C") == ["AT"]
    assert tag_conditions(catalogue, "A trial", "exercise", "achilles tendon once", "C") == []
    # guideline sets admit only grade A evidence
    assert "GL-GEN" not in tag_conditions(catalogue, "Exercise prescription in adults", "", "", "C")
    assert "GL-GEN" in tag_conditions(catalogue, "Exercise prescription in adults", "", "", "A")
    # a guideline whose title names its condition is not filed under others its body mentions in passing
    passing = "neck pain and whiplash " * 5
    guideline = "Clinical Practice Guideline for the Management of Low Back Pain"
    assert tag_conditions(catalogue, guideline, "", passing, "A") == ["LBP"]
    assert tag_conditions(catalogue, guideline, "", passing, "B") == ["LBP", "NP"]
    assert tag_conditions(catalogue, "Clinical Practice Guideline", "", passing, "A") == ["NP"]


def test_catch_all_catalogue_admits_everything():
    catalogue = load_catalogue(EVALUATION_CATALOGUE)
    assert tag_conditions(catalogue, "Anything", "", "", "E") == ["ALL"]


def test_bad_catalogue_is_a_clear_error(tmp_path: Path):
    bad = tmp_path / "c.yaml"
    bad.write_text("conditions:\n  - code: A\n  - code: A\n")
    with pytest.raises(CatalogueError, match="duplicate"):
        load_catalogue(bad)
    with pytest.raises(CatalogueError, match="not found"):
        load_catalogue(tmp_path / "missing.yaml")


def test_a_graft_named_after_a_tendon_does_not_file_an_acl_trial_under_that_tendons_condition():
    """The demo filed ACL reconstruction trials with patellar tendon and hamstring tendon grafts under
    patellar tendinopathy (PT) and hamstring strain injury (HSI): "patellar tendon" and "hamstring" alone
    name the graft."""
    catalogue = load_catalogue(DEFAULT_CATALOGUE)
    title = "Patellar tendon versus hamstring tendon autograft for anterior cruciate ligament rupture in adults"
    body = "bone-patellar tendon-bone and hamstring tendon grafts " * 5
    assert tag_conditions(catalogue, title, "", body, "B") == ["ACL"]
    assert tag_conditions(catalogue, "Eccentric training for patellar tendinopathy", "", "", "C") == ["PT"]
    assert tag_conditions(catalogue, "Nordic exercise and hamstring strain injuries in football", "", "", "C") == [
        "HSI"
    ]
    assert tag_conditions(catalogue, "A trial", "", "recurrent injuries to the hamstring " * 3, "C") == ["HSI"]
