"""How well `question_anchors` reads a clinical question's intervention, comparator and outcome.

No dataset here labels clinicians' own questions with PICO fields, so this is a proxy, labelled as
one wherever it is printed: Evidence Inference's doctor-written (intervention, comparator, outcome)
prompts are put into the phrasings clinicians use, each followed (seeded) by nothing, a population
or a timepoint clause. A field scores the content-word F1 of the parsed anchor against the
prompt's string (0 when the parser leaves it empty), the overlap `ebm eval pico`'s span metric uses.

- `PHRASINGS` are the forms the parser was written and checked for (on train prompts): the
  benchmark's own template and forms of the SR-RAG benchmark's questions ("Does I result in greater
  improvement in O compared to C?") and of PICO question guides.
- `HELD_OUT` phrasings were written before the parser was first run on them and never used to
  change it: their figure estimates how it reads a phrasing it was not written for.

The same-run baseline gives every field the whole question, what retrieval without a parser has.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ebm_platform.benchmark.evidence_inference import prompts
from ebm_platform.evaluation.pico_eval import overlap
from ebm_platform.intervals import interval
from ebm_platform.retrieval.questions import question_anchors
from ebm_platform.vocabulary import Anchors

PHRASINGS = {
    "effect-of": "What is the effect of {I} compared with {C} on {O}{S}?",
    "reported-effects": "What are the reported effects of {I} compared to {C} on {O}{S}?",
    "improve": "Does {I} improve {O} compared with {C}{S}?",
    "result-in-greater": "Does {I} result in greater improvement in {O} compared to {C}{S}?",
    "lower-than": "Does {I} result in lower {O} than {C}{S}?",
    "better-than": "Is {I} better than {C} for {O}{S}?",
    "versus": "Does {I} versus {C} reduce {O}{S}?",
    "compare-with": "How does {I} compare with {C} for {O}{S}?",
    "fronted-comparator": "Compared with {C}, does {I} change {O}{S}?",
    "difference-between": "Is there a significant difference in {O} between {I} and {C}{S}?",
    "comparable-effects": "Do {I} and {C} have comparable effects on {O}{S}?",
    "more-than": "Does {I} reduce {O} more than {C}{S}?",
    "as-effective-as": "Is {I} as effective as {C} for {O}{S}?",
}
HELD_OUT = {
    "more-effective-in-reducing": "Is {I} more effective than {C} in reducing {O}{S}?",
    "can-lower": "Can {I} lower {O} compared to {C}{S}?",
    "effects-versus": "What are the effects of {I} versus {C} on {O}{S}?",
    "rather-than-to-improve": "Should clinicians use {I} rather than {C} to improve {O}{S}?",
    "outcome-differ": "Does {O} differ between {I} and {C}{S}?",
    "colon-question": "{I} compared with {C}: does it change {O}{S}?",
}
ARMS_EXCHANGED = "arms-exchanged"  # the template asked about the arms the other way round (gold swapped)
EXCHANGED = {ARMS_EXCHANGED: "What is the effect of {C} compared with {I} on {O}{S}?"}
SUFFIXES = (
    "",
    " in adults with chronic low back pain",
    " at 12 weeks",
    " in patients with knee osteoarthritis at 6 months",
    " in the short term",
)
FIELDS = ("intervention", "comparator", "outcome")


def template(phrasing: str) -> str:
    """The question template of a named phrasing (`PHRASINGS`, `HELD_OUT` or `EXCHANGED`: the
    latter names the comparator first, and its answers are scored against the swapped label)."""
    found = PHRASINGS.get(phrasing) or HELD_OUT.get(phrasing) or EXCHANGED.get(phrasing)
    if found is None:
        raise ValueError(f"unknown phrasing {phrasing!r}: one of {', '.join([*PHRASINGS, *HELD_OUT, *EXCHANGED])}")
    return found


def phrase(prompt: dict, phrasing: str, suffix: str = "") -> str:
    """A prompt's question in one of the named phrasings."""
    return template(phrasing).format(I=prompt["intervention"], C=prompt["comparator"], O=prompt["outcome"], S=suffix)


def field_scores(row: dict, anchors: Anchors) -> list[float]:
    """Content-word F1 of each parsed field against the prompt's string."""
    return [overlap(row[f], getattr(anchors, f))[2] if getattr(anchors, f) else 0.0 for f in FIELDS]


def _whole(question: str) -> Anchors:
    return Anchors(intervention=question, comparator=question, outcome=question)


def evaluate_questions(
    datasets_dir: Path,
    split: str = "validation",
    limit: int | None = None,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict:
    """Per phrasing and field: the parser's and the whole-question baseline's mean F1, and the
    means over `PHRASINGS` and over `HELD_OUT` with question bootstrap 95% intervals."""
    rows = [
        r
        for r in prompts(datasets_dir, split).iter_rows(named=True)
        if r["intervention"] and r["comparator"] and r["outcome"]
    ][:limit]
    if not rows:
        raise ValueError(f"no complete Evidence Inference prompts in the {split} split")
    rng = random.Random(seed)
    suffixes = [rng.choice(SUFFIXES) for _ in rows]
    report: dict = {
        "split": split,
        "prompts": len(rows),
        "metric": "content-word F1 per field (proxy: Evidence Inference prompts put into clinicians' phrasings)",
        "phrasings": {},
        "summary": {},
    }
    for group, templates in (("development", PHRASINGS), ("held_out", HELD_OUT)):
        per_prompt = {"parser": np.zeros(len(rows)), "whole question": np.zeros(len(rows))}
        for name, example in templates.items():
            entry = {}
            for label, parse in (("parser", question_anchors), ("whole question", _whole)):
                scores = np.array(
                    [field_scores(row, parse(phrase(row, name, suffix))) for row, suffix in zip(rows, suffixes)]
                )
                per_prompt[label] += scores.mean(1) / len(templates)
                entry[label] = {
                    **{f: round(float(v), 3) for f, v in zip(FIELDS, scores.mean(0))},
                    "mean": round(float(scores.mean()), 3),
                }
            report["phrasings"][name] = {"group": group, "example": example, **entry}
        report["summary"][group] = {
            label: {"mean": round(float(v.mean()), 3), "interval_95": [round(x, 3) for x in interval(v)]}
            for label, v in per_prompt.items()
        }
        if progress:
            progress(f"{group} phrasings: parser {report['summary'][group]['parser']['mean']:.3f}")
    return report
