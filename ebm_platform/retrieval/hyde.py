"""PICO-guided HyDE (SR-RAG Fig. F.1): hypothetical evidence passages that reuse the question's
P/I/C/O/T anchors and never invent a missing one."""

from __future__ import annotations

from ebm_platform.llm.client import LLMClient
from ebm_platform.vocabulary import Anchors

HYDE_PROMPT = """You are a sports rehabilitation clinician.
Write a concise, evidence-style passage that answers the question, explicitly following PICOT:
- P: population characteristics and key constraints
- I: intervention details (dose/frequency/intensity/progression)
- C: comparator if applicable
- O: outcomes and relevant measures
- T: time horizon / follow-up
Anchors stated by the question (reuse them; do NOT add a field the question leaves empty): {anchors}

Constraints:
- Do NOT cite sources.
- Use neutral clinical language.
- 5-8 sentences, concise, declarative, paper-like.

Question:
{question}

Output ONLY the hypothetical evidence window, as JSON: {{"passage": "..."}}"""
HYDE_SCHEMA = {
    "type": "object",
    "properties": {"passage": {"type": "string", "minLength": 20}},
    "required": ["passage"],
}
PASSAGES = 3
TEMPERATURE = 0.3


def offline_passages(question: str, a: Anchors) -> list[str]:
    """Three evidence-style passages built only from the anchors the question states."""
    p, i, c, o, t, cond = a.population, a.intervention, a.comparator, a.outcome, a.timepoint, a.condition
    subject = i or "the intervention"
    who = f" in {p}" if p else (f" in patients with {cond}" if cond else "")
    first = [f"This randomised controlled trial evaluated {subject}{who}."]
    if c:
        first.append(f"{subject.capitalize()} was compared with {c}.")
    if o:
        first.append(f"The primary outcome was {o}" + (f", assessed at {t}." if t else "."))
    second = [f"Participants{who} received {subject}" + (f" or {c}" if c else "") + "."]
    if o:
        second.append(f"Between-group differences in {o} were reported" + (f" at {t}." if t else "."))
    third = [f"Evidence on {subject}" + (f" versus {c}" if c else "") + (f" for {cond}" if cond else "") + "."]
    if p:
        third.append(f"Population: {p}.")
    if o:
        third.append(f"Outcome measures included {o}.")
    passages = [" ".join(first), " ".join(second), " ".join(third)]
    if not a.terms:  # nothing to anchor on: the question itself is the only honest passage
        return [question]
    return passages


def hyde_passages(question: str, anchors: Anchors, client: LLMClient) -> tuple[list[str], str]:
    """3 passages (LLM at temperature 0.3, or offline), and the mode that produced them."""
    if client.offline:
        return offline_passages(question, anchors), "offline (anchor templates)"
    prompt = HYDE_PROMPT.format(question=question, anchors=anchors.as_dict())
    passages = []
    for n in range(PASSAGES):
        result = client.complete_json(
            f"hyde_{n}", prompt, HYDE_SCHEMA, offline=lambda: {"passage": question}, temperature=TEMPERATURE
        )
        passages.append(result.data["passage"])
    return passages, f"llm:{client.model}"
