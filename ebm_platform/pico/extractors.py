"""Every PICO extractor behind one shape: typed character spans {type, text, start, end}.

The learned tagger yields spans; the rules and an LLM yield names, which are put on the text at
every case-insensitive whole-word occurrence (the convention an outside token-level evaluation
uses for extractors without offsets).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ebm_platform.graph import pico_rules
from ebm_platform.graph.extraction import Extractor
from ebm_platform.pico.spans import TYPE_CLASS, Words, label_chars, name_spans

CLASS_ORDER = {"P": 0, "I": 1, "O": 2}  # later classes overwrite earlier ones, as in the gold


def located(text: str, named: list[tuple[str, str]]) -> list[dict]:
    """Spans of (name, type) pairs at every occurrence of the name in `text`, in text order."""
    types = dict((name.lower(), type_) for name, type_ in named if type_ in TYPE_CLASS)
    spans = name_spans(text, list(types.items()))
    return sorted(
        ({"type": t, "text": text[a:b], "start": a, "end": b} for a, b, t in spans),
        key=lambda e: (e["start"], e["end"]),
    )


def rule_entities(text: str) -> list[dict]:
    """The offline rules' P/I/C/O names of a text, located."""
    return located(text, [(e["name"], e["type"]) for e in pico_rules.extract(text).entities])


def llm_extractor(settings) -> tuple[str, Callable[[str], list[dict]]]:
    """(name, text -> spans) of the schema-bounded LLM extraction configured by EBM_LLM_* (the same
    prompt the graph uses), its names located; an error when no model is set."""
    from ebm_platform.graph.schema import load_schema
    from ebm_platform.llm.client import LLMClient

    client = LLMClient(model=settings.llm_model, api_base=settings.llm_api_base, api_key=settings.llm_api_key)
    if client.offline:
        raise ValueError("the LLM extractor needs EBM_LLM_MODEL set to a litellm model")
    extractor = Extractor(load_schema("pico_extended"), client)
    return f"llm:{settings.llm_model}", lambda text: located(
        text, [(e["name"], e["type"]) for e in extractor.window(text)["entities"]]
    )


def entity_labels(words: Words, entities: list[dict]) -> np.ndarray:
    """Word labels (EBM-NLP classes) of typed spans."""
    spans = [(e["start"], e["end"], TYPE_CLASS[e["type"]]) for e in entities if e["type"] in TYPE_CLASS]
    return label_chars(words, sorted(spans, key=lambda s: CLASS_ORDER[s[2]]))
