"""The answer's `verdict`: the direction its core conclusion states, or `insufficient evidence`.

Offline (deterministic rules over the core answer's statements, most relevant first): the first
statement that reports a comparison decides. No-difference language ("no significant", "did not
differ", "similar", p > 0.05) gives `no significant difference`; otherwise the balance of
increase words (increased, higher, improved, greater, ...) against decrease words (reduced, lower,
fewer, ...) gives `significantly increased` / `significantly decreased`; a statement with neither
is skipped, and when none reports a comparison the verdict is `insufficient evidence`.
With an LLM the model states the verdict in its answer (IRCOT_ANSWER_SCHEMA); when it does not,
these rules read its statements and the answer says so.
PubMedQA's yes / no / maybe is read from the same verdict (`as_yes_no`): an effect -> yes, no
significant difference -> no, insufficient evidence -> maybe (a mapping, labelled as such).
"""

from __future__ import annotations

import re

INCREASED, DECREASED, NO_DIFFERENCE, INSUFFICIENT = (
    "significantly increased", "significantly decreased", "no significant difference", "insufficient evidence")
VERDICTS = (INCREASED, DECREASED, NO_DIFFERENCE, INSUFFICIENT)
_NO_DIFFERENCE = re.compile(
    r"\bno (?:statistically )?significant\b|\bnot (?:statistically )?significant(?:ly)?\b|\bnon-?significant|"
    r"\bdid not (?:significantly )?(?:differ|change|improve|reduce|increase|affect)|\bno (?:significant )?differences?\b|"
    r"\bsimilar\b|\bcomparable\b|\bn\.?s\.?\b|\bp\s*(?:>|=)\s*0?\.(?:0[5-9]|[1-9])|\bwas not associated\b|"
    r"\bno (?:effect|change|benefit)\b|\bdid not\b", re.I)
_UP = re.compile(r"\b(?:increas\w*|higher|greater|improv\w*|elevat\w*|longer|rais\w*|gain\w*|better|"
                 r"enhanc\w*|superior|boost\w*)\b", re.I)
_DOWN = re.compile(r"\b(?:decreas\w*|lower\w*|reduc\w*|less|fewer|shorter|declin\w*|drop\w*|fell|fall\w*|"
                   r"diminish\w*|worse|inferior|attenuat\w*|suppress\w*)\b", re.I)


def offline_verdict(statements: list[str]) -> tuple[str, str | None]:
    """The verdict and the statement it rests on (None when evidence is insufficient)."""
    for statement in statements:
        if _NO_DIFFERENCE.search(statement):
            return NO_DIFFERENCE, statement
        up, down = len(_UP.findall(statement)), len(_DOWN.findall(statement))
        if up != down:
            return (INCREASED if up > down else DECREASED), statement
    return INSUFFICIENT, None


def as_yes_no(verdict: str) -> str:
    """PubMedQA's answer read from a verdict: effect -> yes, no difference -> no, else maybe."""
    return {INCREASED: "yes", DECREASED: "yes", NO_DIFFERENCE: "no"}.get(verdict, "maybe")
