"""PICO extraction on the lake's own windows (run `make demo` first): entity-name quality of the
offline rules alone (the extractor before the learned tagger) vs what `pico_extractions` stored,
and the tagging throughput of the lake's tagger, the previous tagger the environment keeps and the
rules, same run, same windows."""

from __future__ import annotations

import time
from pathlib import Path

import polars as pl

from ebm_platform.evaluation.pico_eval import previous_tagger, tagger_model
from ebm_platform.graph import pico_rules
from ebm_platform.graph.normalise import normalise
from ebm_platform.graph.stats import is_lone_abbreviation, is_verb_phrase
from ebm_platform.index.embeddings import get_encoder
from ebm_platform.index.window_index import WindowIndex
from ebm_platform.lake_layout import LakeLayout
from ebm_platform.pico.finetuned import usable_tagger
from ebm_platform.pico.tagger import read_meta, tagger_path
from ebm_platform.pico.windows import tag_windows
from ebm_platform.settings import get_settings

CORE = ("Population", "Intervention", "Comparator", "Outcome")
SAMPLE = 500


def distinct(found: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(type, normalised name) -> the first surface name seen (quality is judged on surfaces)."""
    out: dict[tuple[str, str], str] = {}
    for type_, name in found:
        if type_ in CORE:
            out.setdefault((type_, normalise(name)), name)
    return out


def quality(names_by_key: dict[tuple[str, str], str]) -> str:
    names = list(names_by_key.values())
    verbs, abbreviations = sum(map(is_verb_phrase, names)), sum(map(is_lone_abbreviation, names))
    return (
        f"{len(names):>6} distinct P/I/C/O names, verb phrases {verbs:>5} ({verbs / max(len(names), 1):.1%}), "
        f"lone abbreviations {abbreviations:>4} ({abbreviations / max(len(names), 1):.1%})"
    )


def run() -> None:
    lake = Path(get_settings().lake)
    folder = lake / "assets"
    if not (folder / "pico_extractions").is_dir():
        print(f"no pico_extractions in {lake}: run `make demo` first")
        return
    windows = (
        pl.concat(
            [pl.read_parquet(p) for p in sorted((folder / "evidence_windows").glob("*.parquet"))],
            how="diagonal_relaxed",
        )
        .unique("window_id", keep="first")
        .sort("window_id")
    )
    stored = pl.concat(
        [pl.read_parquet(p) for p in sorted((folder / "pico_extractions").glob("*.parquet"))], how="diagonal_relaxed"
    )
    started = time.perf_counter()
    rules = distinct(
        [(e["type"], e["name"]) for text in windows["text"].to_list() for e in pico_rules.extract(text).entities]
    )
    rules_s = time.perf_counter() - started
    now = distinct(stored.filter(pl.col("kind") == "entity").select("subject_type", "subject").rows())
    print(f"windows {windows.height} (the demo lake's, deduplicated across partitions)")
    print(f"rules alone (before):      {quality(rules)}")
    print(f"pico_extractions (now):    {quality(now)}")
    tagger = usable_tagger(tagger_path(lake))
    if tagger is None:
        print("no usable learned tagger in the lake: pico_extractions ran the rules")
        return
    sample = windows.head(SAMPLE).to_dicts()
    encoder, index = get_encoder(), WindowIndex(LakeLayout(lake).lancedb)
    rates = {}
    previous = previous_tagger(read_meta(tagger_path(lake)))
    for name, model in (("the lake's tagger", tagger), ("the previous tagger", previous)):
        if model is None:
            continue
        tag_windows(sample[:8], model, encoder, index)  # compiled and warm before timing
        started = time.perf_counter()
        tag_windows(sample, model, encoder, index)
        head = tagger_model(model.meta)
        how = "reads each window" if head == "finetuned" else "stored token vectors"
        rates[f"{name} ({head}, {how})"] = len(sample) / (time.perf_counter() - started)
    started = time.perf_counter()
    for row in sample:
        pico_rules.extract(row["text"])
    rates["rules"] = len(sample) / (time.perf_counter() - started)
    print(
        f"throughput on {len(sample)} windows, windows/s: "
        + "; ".join(f"{name} {rate:.0f}" for name, rate in rates.items())
        + f" (all windows, rules: {rules_s:.1f} s)"
    )
