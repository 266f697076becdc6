"""What makes a name fit to be a benchmark question's PICOT field, shared by the question generator
(`generation`) and the benchmark's quality rules (`quality`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from ebm_platform.benchmark.gold import fold

# Words that do not say what was given or measured: how much, when, which group, how it is given, a statistic
# ("What is the effect of two treatment on ...", "... of mean treatment compared with placebo ...", "... of Time on
# Time?", "... of Low on Physical impairment?", "... of KOOS-pain ...": the tagger's slips). A name made of these
# alone (numbers too) is no question's field; "conservative treatment", "usual care" and "placebo" name one.
VAGUE_WORDS = frozenset(
    "a an the of and or to in on at by for with without over against up into from following after before prior pre "
    "post during time times day days week weeks month months year years baseline end first second last one two "
    "three four five mean median average lower higher low high deep good poor additional other both each all "
    "minimal clinically important difference group groups arm arms patients participants subjects improvement "
    "improvements change changes effect effects event events result results variable variables measure measures "
    "score scores bonferroni anova oral topical local systemic intramuscular data value values total overall due "
    "per level levels risk mild moderate severe serious pretreatment posttreatment preoperative postoperative "
    "reduction reductions increase increases decrease decreases".split()
)
PEOPLE = frozenset("patients participants subjects".split())  # vague words that still name a population
# a name that opens with a pronoun or a determiner points at something named elsewhere ("... on concomitant
# analgesics in There?", "these patients"); one that ends in a word that joins it to more was cut mid-phrase ("in
# patients with knee OA following?"); a table's cell separator runs a name across cells ("rescue medication |"); an
# author's name or a footnote's number glued to a word cites a source ("in Kon et al19?", "in sacroiliitis58?")
POINTERS = frozenset("there this these those that it its they them their we our he she his her which who".split())
DANGLING = frozenset(
    "following with of and or in on at for the after before versus vs compared than to from by".split()
)
CITATION = re.compile(r"\bet al(?:\b|\d)|[a-z]{4,}\d+$")


def malformed(name: str) -> bool:
    """A name that points elsewhere (`POINTERS`), stops mid-phrase (`DANGLING`), runs across a table's cells or cites
    a source (`CITATION`): no question's field."""
    folded = fold(name)
    words = folded.split()
    return (
        "|" in name
        or (bool(words) and (words[0] in POINTERS or words[-1] in DANGLING))
        or bool(CITATION.search(folded))
    )


def repeats_fields(population: str | None, others: Sequence[str | None]) -> bool:
    """Whether a population names nothing that the question's other fields do not ("... on pain in pain?", "... on
    number of patients in patients?"); words that say nothing (`VAGUE_WORDS`) but people's do not count."""
    asked = {w for name in others for w in fold(name or "").split()}
    return set(fold(population or "").split()) - (VAGUE_WORDS - PEOPLE) <= asked
