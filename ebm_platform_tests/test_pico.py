"""The learned PICO tagger: projection, names, token metrics, the asset with its blocking check, the CLI."""

import json
import os
import subprocess
import sys

import dagster as dg
import numpy as np
import polars as pl
import pytest

from ebm_platform.abbreviations import abbreviations, spell_out
from ebm_platform.graph.stats import is_lone_abbreviation, is_verb_phrase
from ebm_platform.pico.distant import Projector, label_article, name_words, population_spans
from ebm_platform.pico.extractors import entity_labels, located, rule_entities
from ebm_platform.pico.finetuned import FineTunedTagger, load_tagger, runs_of, usable_tagger, word_probabilities
from ebm_platform.pico.names import entities, entity_name, sentence_parts
from ebm_platform.pico.selection import EntitySelector, candidates, decode
from ebm_platform.pico.spans import CLASSES, Words, runs, token_scores, trim
from ebm_platform.pico.tagger import (
    SALIENCE,
    PicoTagger,
    Rarity,
    read_meta,
    rule_flags,
    salience,
    shape_flags,
    tagger_path,
)
from ebm_platform.pico.windows import tag_texts

TEXT = (
    "Hip strengthening in women with patellofemoral pain. Abstract. Forty women with patellofemoral pain were "
    "randomized to hip and knee exercise (HKE) or knee exercise alone. Pain intensity on a visual analogue "
    "scale was lower after HKE than after knee exercise at 12 weeks."
)


def _projector() -> Projector:
    return Projector.fit(["knee exercise pain", "pain scale", "randomized women pain", "weeks pain"] * 10)


def test_words_and_character_spans_round_trip():
    words = Words.of("Pain (VAS) fell, knee-OA.")
    assert words.tokens == ["Pain", "(", "VAS", ")", "fell", ",", "knee-OA", "."]
    assert words.index_of_chars(6, 9) == (2, 3)
    assert trim(words, 0, 4) == (0, 4)  # the closing bracket stays with its opening one
    assert trim(Words.of("of the knee ."), 0, 4) == (2, 3)


def test_projection_marks_the_doctor_written_strings():
    projector = _projector()
    rows = [
        {
            "intervention": "Hip and knee exercise (HKE)",
            "comparator": "Knee exercise alone",
            "outcome": "Pain intensity (VAS) at 12 weeks",
        }
    ]
    example = label_article(projector, "PMC1", TEXT, 0, rows)
    spans = {(CLASSES[c], " ".join(example.words.tokens[i:j])) for i, j, c in runs(example.labels)}
    # adjacent arms join into one run of I words; a projection never starts or ends on "or"
    assert ("I", "hip and knee exercise ( HKE ) or knee exercise alone") in spans
    assert ("O", "Pain intensity") in spans
    assert ("P", "Forty women with patellofemoral pain") in spans
    assert ("P", "women with patellofemoral pain") in spans  # the title's, without "Hip strengthening in"
    assert name_words("Liraglutide (1.8 mg) plus glimepiride") == {"liraglutide", "glimepiride"}


def test_an_outcome_naming_an_arm_does_not_make_the_arm_an_outcome():
    words = Words.of("Etoricoxib reduced pain more than naproxen.")
    projector = Projector.fit(["pain"] * 30)
    rows = [{"intervention": "Etoricoxib", "comparator": "Naproxen", "outcome": "Pain compared with naproxen"}]
    example = label_article(projector, "PMC2", words.text, 0, rows)
    labels = dict(zip(example.words.tokens, (CLASSES[c] for c in example.labels)))
    assert labels["naproxen"] == "I" and labels["pain"] == "O"


def test_population_proxy_pattern():
    text = "We enrolled 120 adults with chronic neck pain who were randomly assigned."
    ((start, end),) = population_spans(text)
    assert text[start:end] == "120 adults with chronic neck pain"


def test_names_expand_abbreviations_drop_doses_and_counts():
    known = abbreviations("treated with chloroquine (CQ) or magnetic resonance (MR) guided therapy")
    assert known == {"CQ": "chloroquine", "MR": "magnetic resonance"}
    assert entity_name("CQ", "Intervention", known) == "chloroquine"
    assert entity_name("etoricoxib 90 mg once daily", "Intervention") == "etoricoxib"
    assert entity_name("120 adults with neck pain", "Population") == "adults with neck pain"
    assert entity_name("2", "Intervention") == "" and entity_name("(0.5)", "Comparator") == ""
    assert is_verb_phrase("randomized into two treatment") and not is_verb_phrase("hip strengthening")
    assert is_lone_abbreviation("MR") and not is_lone_abbreviation("chloroquine")
    assert spell_out("CQ and MRI after CQ", known) == "chloroquine and MRI after chloroquine"  # whole words only
    assert spell_out("CQ", {}) == "CQ"


def test_token_scores_and_located_names():
    words = Words.of(TEXT)
    spans = located(TEXT, [("knee exercise", "Comparator"), ("pain intensity", "Outcome")])
    assert [TEXT[e["start"] : e["end"]] for e in spans] == [
        "knee exercise",
        "knee exercise",
        "Pain intensity",
        "knee exercise",
    ]
    labels = entity_labels(words, spans)
    perfect = token_scores([labels], [labels])
    assert perfect["I"]["f1"] == 1.0 and perfect["O"]["f1"] == 1.0
    empty = token_scores([labels], [np.zeros_like(labels)])
    assert empty["I"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "gold_tokens": 6}
    assert {e["type"] for e in rule_entities(TEXT)} >= {"Population", "Outcome"}


def test_salience_reads_what_the_text_repeats_and_where():
    words = Words.of("Pain after surgery. Abstract. Pain was lower with ice (p < 0.05). Sleep was similar.")
    rarity = Rarity({"pain": 9, "ice": 0}, 9)
    table = dict(zip(words.tokens, salience(words, rarity)))  # a word's last occurrence wins
    pain, ice, sleep = table["Pain"], table["ice"], table["Sleep"]
    assert pain[0] == pytest.approx(np.log1p(2) / 3) and ice[0] == pytest.approx(np.log1p(1) / 3)
    assert pain[2] == 1 and ice[2] == 0  # the title (first sentence) holds "pain", not "ice"
    assert ice[4] == 1 and sleep[4] == 0  # "p < 0.05" makes a result sentence
    assert pain[5] == pytest.approx(np.log1p(1) / 3) and sleep[5] == 0
    assert table["with"][6] == 1 and ice[6] == 0
    assert pain[7] == pytest.approx(0.0) and ice[7] == pytest.approx(1.0)  # in every / no training article
    assert salience(Words.of(""), rarity).shape == (0, SALIENCE)


def _trial(rng: np.random.Generator) -> tuple[Words, np.ndarray, np.ndarray, np.ndarray]:
    """A made-up abstract whose tagger marks one mention each of two arms, a co-medication, the
    outcome and a side measure; the gold marks where the arms' and the outcome's names occur."""
    arm, other, extra = ("".join(rng.choice(list("bcdfgklmnprstvz"), 7)) + "ine" for _ in range(3))
    text = (
        f"{arm.title()} versus {other} for knee pain. Abstract. Adults received {arm} or {other} for "
        f"six weeks; some also took {extra}. Pain score fell more with {arm} than with {other} (p < 0.01). "
        f"Sleep quality was recorded. {arm.title()} was well tolerated."
    )
    words = Words.of(text)
    lower = [t.lower() for t in words.tokens]
    rarity = Rarity({}, 100)
    x = np.hstack(
        [np.zeros((len(words), 4), dtype=np.float32), rule_flags(words), shape_flags(words), salience(words, rarity)]
    )
    probs = np.tile(np.array([0.9, 0.0, 0.05, 0.05]), (len(words), 1))
    gold = np.zeros(len(words), dtype=np.int64)
    for name, label, is_gold in (
        (arm, 2, True),
        (other, 2, True),
        (extra, 2, False),
        ("pain score", 3, True),
        ("sleep quality", 3, False),
    ):
        parts = name.split()
        hits = [i for i in range(len(lower)) if lower[i : i + len(parts)] == parts]
        first = hits[0] if name != "pain score" else hits[-1]
        probs[first : first + len(parts)] = [0.2, 0.0, 0.8, 0.0] if label == 2 else [0.2, 0.0, 0.0, 0.8]
        for i, j in rarity.projector().project(words, name, single=label == 2) if is_gold else []:
            gold[i:j] = label  # the gold projects the doctor's names as label_article does
    return words, x, probs, gold


def test_entity_selection_marks_kept_names_wherever_they_occur_and_learns_which_to_keep(tmp_path):
    rng = np.random.default_rng(3)
    texts = [_trial(rng) for _ in range(40)]
    projector = Rarity({}, 100).projector()
    words, x, probs, gold = texts[0]
    found = candidates(words, x, probs, projector)
    assert sorted((CLASSES[c.label], int(c.where.sum())) for c in found) == [
        ("I", 1),
        ("I", 3),
        ("I", 4),
        ("O", 2),
        ("O", 3),
    ]  # the title's "pain" also names the outcome
    every = decode(probs, found, [True] * len(found))
    assert (every[gold == 2] == 2).all()  # each arm marked at all its mentions, not only the tagged first
    selector = EntitySelector.fit(*zip(*[t[:3] for t in texts[:30]]), [t[3] for t in texts[:30]], projector)
    selector.save(tmp_path / "selector.json")
    loaded = EntitySelector.load(tmp_path / "selector.json")
    held_out = texts[30:]
    for w, xs, p, _ in held_out:
        assert (loaded.labels(w, xs, p, projector) == selector.labels(w, xs, p, projector)).all()
    head = token_scores([t[3] for t in held_out], [t[2].argmax(1) for t in held_out])
    selected = token_scores([t[3] for t in held_out], [loaded.labels(*t[:3], projector) for t in held_out])
    assert head["I"]["recall"] < 0.5 and selected["I"]["f1"] == 1.0
    assert selected["O"]["precision"] > head["O"]["precision"] and selected["O"]["f1"] == 1.0
    assert selector.report["classes"]["I"]["selected_f1_out_of_fold"] == 1.0


def test_fine_tuned_runs_cut_at_word_starts_and_mark_each_words_first_piece():
    from transformers import AutoTokenizer

    from ebm_platform.bundled_model import BUNDLED, model_path

    tokenizer = AutoTokenizer.from_pretrained(model_path(BUNDLED))
    words = Words.of(TEXT + " Electroacupuncture and hydrotherapy " * 60)
    runs = runs_of(tokenizer, words, chunk_words=50)
    assert len(runs) > 1
    marked = np.concatenate([r.words[r.words >= 0] for r in runs])
    assert marked.tolist() == list(range(len(words)))  # every word once, in order, by its first piece
    for run in runs:
        assert run.ids[0] == tokenizer.cls_token_id and run.ids[-1] == tokenizer.sep_token_id
        assert (run.words >= 0).sum() <= 50 and len(run.ids) <= 256
        assert run.words[1] >= 0  # a run opens on a word's first piece
    # a word's class comes from its first piece's logits; a word without a piece stays "none"
    logits = [np.tile(np.array([0.0, 0.0, 9.0, 0.0], np.float32), (len(r.ids), 1)) for r in runs]
    probs = word_probabilities(logits, runs, len(words) + 1, np.zeros(len(CLASSES), np.float32))
    assert (probs[:-1].argmax(1) == CLASSES.index("I")).all() and probs[-1].argmax() == 0


@pytest.fixture(scope="module")
def trained_lake(tmp_path_factory, datasets_dir):
    """A lake whose pico_tagger was trained through Dagster on 40 articles per split."""
    from ebm_platform.defs.graph import pico_tagger, pico_tagger_beats_rules
    from ebm_platform.defs.resources import BenchmarkResource
    from ebm_platform_tests.conftest import lake_resources

    lake = tmp_path_factory.mktemp("pico") / "lake"
    resources = {**lake_resources(lake), "benchmark": BenchmarkResource(datasets_dir=str(datasets_dir))}
    config = dg.RunConfig(ops={"pico_tagger": {"config": {"article_limit": 40}}})
    result = dg.materialize(
        [pico_tagger, pico_tagger_beats_rules],
        resources=resources,
        run_config=config,
        instance=dg.DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    return lake, resources, config, result


def test_no_span_crosses_a_sentence_end():
    """Two arms tagged I with the full stop between them are two spans, not one Comparator "usual care.
    Balance training"; an abbreviation's full stop inside an arm ("vs. placebo") does not cut it."""
    text = "Participants received balance training or usual care. Balance training improved gait vs. placebo."
    words = Words.of(text)
    labels = np.zeros(len(words), dtype=np.int64)
    i_class = CLASSES.index("I")
    first = words.tokens.index("balance")
    labels[first : words.tokens.index("improved")] = i_class  # "balance training or usual care . Balance training"
    vs = words.tokens.index("vs")
    labels[vs : len(words) - 1] = i_class  # "vs . placebo"
    spans = entities(words, labels)
    assert [e["text"] for e in spans] == ["balance training or usual care", "Balance training", "vs. placebo"]
    assert all(text[e["start"] : e["end"]] == e["text"] for e in spans)
    assert sentence_parts(words, vs, len(words) - 1) == [(vs, len(words) - 1)]


def test_pico_tagger_asset_trains_scores_and_is_reused(trained_lake):
    from ebm_platform.defs.graph import pico_tagger, pico_tagger_beats_rules

    lake, resources, config, result = trained_lake
    assert result.success
    (check,) = [
        e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    meta = read_meta(tagger_path(lake))
    report = meta["validation"]
    assert check.passed == meta["beats_rules"] == (report["learned"]["macro_f1"] > report["rules"]["macro_f1"])
    assert report["train_articles"] <= 40 and report["articles"] <= 40
    assert report["majority_class"]["macro_f1"] == 0.0
    again = dg.materialize(
        [pico_tagger, pico_tagger_beats_rules],
        resources=resources,
        run_config=config,
        instance=dg.DagsterInstance.ephemeral(),
    )
    (mat,) = [m.event_specific_data.materialization for m in again.get_asset_materialization_events()]
    assert mat.metadata["reused"].value is True
    # the default model: MiniLM fine-tuned end to end, its weights stored as safetensors (no pickle)
    tagger = load_tagger(tagger_path(lake))
    assert isinstance(tagger, FineTunedTagger) and meta["params"]["head"] == report["model"] == "finetuned"
    assert (tagger_path(lake) / "model.safetensors").is_file() and not list(tagger_path(lake).glob("*.pt"))
    # it tags as the embedder encodes, on the INT8 model, and its figures were measured that way
    assert tagger.inference == report["inference"] == "openvino-int8"
    assert "-int8-nncf" in tagger.forward.xml.parent.name
    assert report["learned"]["macro_f1"] > report["majority_class"]["macro_f1"]
    assert len(meta["curve"]) == meta["epochs"] and len(meta["class_bias"]) == len(CLASSES)
    (spans,) = tag_texts(tagger, [TEXT], None)
    for e in spans:
        assert TEXT[e["start"] : e["end"]] == e["text"] and e["type"] in {
            "Population",
            "Intervention",
            "Comparator",
            "Outcome",
        }


def test_blocking_check_keeps_a_worse_tagger_out(tmp_path, datasets_dir, monkeypatch):
    """A head that marks nothing scores below the rules: the check fails and extraction falls back to the
    rules (the BiLSTM head over the embedder's token vectors, `model: lstm`)."""
    from ebm_platform.defs.graph import pico_tagger, pico_tagger_beats_rules
    from ebm_platform.defs.resources import BenchmarkResource
    from ebm_platform.pico import tagger as tagger_module
    from ebm_platform_tests.conftest import lake_resources

    def untrained(cls, words, xs, ys, rarity, params=tagger_module.TaggerParams(), progress=None, dev=None):
        import torch

        net = tagger_module._network(xs[0].shape[1], params, len(rarity.vocabulary))
        torch.nn.init.zeros_(net.out.weight)  # a head that never learned: "no entity" for every word
        net.out.bias.data = torch.tensor([5.0, 0.0, 0.0, 0.0])
        return cls(net, params, {}, rarity)

    monkeypatch.setattr(PicoTagger, "train", classmethod(untrained))
    from ebm_platform import trained_models

    # an empty environment cache: a passing tagger cached by an earlier run would be reused, not trained
    monkeypatch.setattr(trained_models, "cache_path", lambda key: tmp_path / "cache" / key)
    lake = tmp_path / "lake"
    resources = {**lake_resources(lake), "benchmark": BenchmarkResource(datasets_dir=str(datasets_dir))}
    result = dg.materialize(
        [pico_tagger, pico_tagger_beats_rules],
        resources=resources,
        raise_on_error=False,
        run_config=dg.RunConfig(ops={"pico_tagger": {"config": {"article_limit": 12, "model": "lstm"}}}),
        instance=dg.DagsterInstance.ephemeral(),
    )
    (check,) = [
        e.asset_check_evaluation_data for e in result.all_events if e.event_type_value == "ASSET_CHECK_EVALUATION"
    ]
    assert not check.passed
    assert read_meta(tagger_path(lake))["beats_rules"] is False
    assert usable_tagger(tagger_path(lake)) is None


def test_pico_tag_cli_reads_and_writes_json_lines(trained_lake):
    lake, *_ = trained_lake
    docs = [{"id": "a", "text": TEXT}, {"id": 7, "text": "Placebo or ibuprofen for ankle sprain pain."}]
    env = {"EBM_LAKE": str(lake), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-m", "ebm_platform.cli", "pico", "tag", "--jsonl", "--extractor", "learned"],
        input="\n".join(json.dumps(d) for d in docs),
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["a", 7] and {line["extractor"] for line in lines} == {"learned"}
    for doc, line in zip(docs, lines):
        for e in line["entities"]:
            assert doc["text"][e["start"] : e["end"]] == e["text"]
    bad = subprocess.run(
        [sys.executable, "-m", "ebm_platform.cli", "pico", "tag", "--jsonl"],
        input='{"text": 1}\n',
        capture_output=True,
        text=True,
        env=env,
    )
    assert bad.returncode != 0 and "line 1" in bad.stderr


def test_eval_pico_on_ebm_nlp_reports_every_class_beside_the_rules_and_the_projection(trained_lake, datasets_dir):
    lake, *_ = trained_lake
    env = {**os.environ, "EBM_LAKE": str(lake), "EBM_DATASETS_DIR": str(datasets_dir)}
    out = subprocess.run(
        [sys.executable, "-m", "ebm_platform.cli", "eval", "pico", "--benchmark", "ebm-nlp", "--limit", "40", "--json"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    tokens = json.loads(out.stdout)["token_level"]
    assert tokens["benchmark"] == "ebm-nlp" and tokens["headline_classes"] == ["P", "I", "O"]
    assert tokens["articles"] == 4 and tokens["split"] == "EBM-NLP dev tenth"  # the seeded tenth of 40
    saved = read_meta(tagger_path(lake))["validation"]
    # the same dev tenth as in training (encoded in other batches: float16 ties may move a word)
    assert tokens["learned"]["macro_f1"] == pytest.approx(saved["learned"]["macro_f1"], abs=0.01)
    for name in ("learned", "rules", "majority_class"):
        assert set(tokens[name]["classes"]) == {"P", "I", "O"}
    low, high = tokens["macro_f1_interval_95"]["learned"]
    assert low <= tokens["learned"]["macro_f1"] <= high
    projection = tokens["evidence_inference"]
    assert projection["headline_classes"] == ["I", "O"] and projection["articles"] <= 40
    if "previous_tagger" in tokens:  # the environment still keeps the tagger trained on the projection
        assert set(tokens["previous_tagger"]["classes"]) == {"P", "I", "O"} and tokens["previous_tagger_trained_at"]
    assert projection["learned"]["macro_f1"] == pytest.approx(
        saved["evidence_inference"]["learned"]["macro_f1"], abs=0.01
    )


def test_llm_extractor_locates_the_models_names(server, tmp_path, monkeypatch):
    """LLM mode over real HTTP (scripted server): the model's names become spans at every occurrence."""
    from ebm_platform.pico.extractors import llm_extractor
    from ebm_platform.settings import Settings

    answer = {
        "entities": [{"name": "knee exercise", "type": "Comparator"}, {"name": "Pain intensity", "type": "Outcome"}],
        "relations": [],
        "attributes": [],
    }
    server.script = ["content:" + json.dumps(answer)]
    monkeypatch.chdir(tmp_path)  # the client's default response cache stays out of the repository
    settings = Settings(llm_model="openai/test-model", llm_api_base=server.base, llm_api_key="k", lake=tmp_path)
    name, extract = llm_extractor(settings)
    spans = extract(TEXT)
    assert name == "llm:openai/test-model" and server.requests == 1 and "Window:" in server.prompts[0]
    assert [(e["type"], TEXT[e["start"] : e["end"]]) for e in spans][:2] == [("Comparator", "knee exercise")] * 2
    assert ("Outcome", "Pain intensity") in {(e["type"], e["text"]) for e in spans}
    with pytest.raises(ValueError, match="EBM_LLM_MODEL"):
        llm_extractor(Settings(llm_model="offline", lake=tmp_path))


def test_fine_tuned_tagger_tags_lake_windows_after_their_title_and_section(trained_lake):
    """pico_extractions' path: spans within each window's own text, named, from the fine-tuned tagger."""
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.pico.windows import tag_windows

    lake, *_ = trained_lake
    title, body = TEXT.split(". Abstract. ")
    windows = [{"window_id": "w1", "doc_id": "d1", "title": title, "section": "Abstract", "text": body}]
    tagged = tag_windows(windows, load_tagger(tagger_path(lake)), get_encoder())
    assert tagged["w1"], "the tagger found nothing in a trial abstract"
    for e in tagged["w1"]:
        assert body[e["start"] : e["end"]] == e["text"] and e["name"]


def test_a_window_two_conditions_share_is_tagged_once(trained_lake, tmp_path):
    """pico_extractions' SpanStore: a partition takes the spans another partition stored for the same
    window text and tagger; a changed text, or another tagger, is tagged again."""
    from ebm_platform.index.embeddings import get_encoder
    from ebm_platform.pico.windows import SpanStore, tag_windows, tagger_key

    lake, *_ = trained_lake
    tagger = load_tagger(tagger_path(lake))
    read: list[str] = []
    label_texts = tagger.label_texts

    def counting(texts, *args):
        read.extend(texts)
        return label_texts(texts, *args)

    tagger.label_texts = counting
    title, body = TEXT.split(". Abstract. ")
    shared = {"window_id": "w1", "doc_id": "d1", "title": title, "section": "Abstract", "text": body}
    other = {**shared, "window_id": "w2", "text": "Knee exercise reduced pain more than usual care (p < 0.01)."}
    store = SpanStore(tmp_path / "spans", tagger_key(tagger))
    first = tag_windows([shared, other], tagger, get_encoder())
    store.write("LBP", store.rows([shared, other], first))
    assert len(read) == 2

    changed = {**other, "text": other["text"].replace("usual care", "rest")}
    reused = store.reusable("NP", [shared, changed])
    assert set(reused) == {"w1"}  # w2's text differs
    second = tag_windows([shared, changed], tagger, get_encoder(), reused=reused)
    assert len(read) == 3 and read[-1].endswith(changed["text"])  # only the changed window was read
    assert second["w1"] == first["w1"] and second["w1"]
    assert SpanStore(tmp_path / "spans", "another tagger").reusable("NP", [shared]) == {}
    tagger.inference = "openvino"  # the same weights unquantized tag otherwise: not the same tagger
    assert SpanStore(tmp_path / "spans", tagger_key(tagger)).reusable("NP", [shared]) == {}
    assert store.reusable("LBP", [shared]) == {}  # a partition never reuses its own earlier spans


def test_the_span_store_takes_rows_batch_by_batch_and_a_failed_partition_changes_nothing(tmp_path):
    """pico_extractions writes each batch's spans as it is tagged (a partition's spans are never held
    together); the partition's file is replaced only when every batch was written."""
    from ebm_platform.pico.windows import SpanStore

    def rows(ids: list[str]) -> pl.DataFrame:
        return pl.DataFrame(
            {"window_id": ids, "text_sha1": ids, "tagger": ["t"] * len(ids), "spans": ["[]"] * len(ids)}
        )

    store = SpanStore(tmp_path, "t")
    store.write("LBP", rows(["a"]))
    with pytest.raises(RuntimeError, match="tagging failed"), store.writer("LBP") as append:
        append(rows(["b"]))
        raise RuntimeError("tagging failed")
    assert pl.read_parquet(tmp_path / "LBP.parquet")["window_id"].to_list() == ["a"]
    with store.writer("LBP") as append:
        append(rows(["b", "c"]))
        append(rows(["d"]))
    assert pl.read_parquet(tmp_path / "LBP.parquet")["window_id"].to_list() == ["b", "c", "d"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["LBP.parquet"]  # no temporary file left
