"""Text extracted from a PDF, made readable: page furniture removed, split words joined, and a
guideline's recommendations found with the strength the guideline gives each.

Pure functions over strings; the vocabulary that decides whether a piece is a word is passed in
(the importer uses the bundled encoder's WordPiece vocabulary plus the document's own words)."""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, replace
from itertools import zip_longest

PAGE_MARK = re.compile(r"\bPage\s+\d+\s+of\s+\d+\b")
LONE_NUMBER = re.compile(r"^\s*\d{1,3}\s*$", re.M)
WORD = re.compile(r"[A-Za-z]+")
HYPHENATED = re.compile(r"\b([A-Za-z]+)-([a-z]+)\b")
SUFFIXES = frozenset("ing ings ed tion tions ment ments ly ness".split())  # no word of a compound
SHORT_WORDS = frozenset("a i an as at be by do go he if in is it me my no of on or so to up us we".split())
HEADER_WORDS = 30  # the longest running header looked for
RARER_PIECE = 5  # a recurring piece is still a split word when the whole word is written out 5 times as often

# Recommendation strengths as guidelines state them (GRADE wording: VA/DoD's table, WHO's parentheses).
STRENGTH = re.compile(
    r"(?P<strength>Strong\s+for|Weak\s+for|Neither\s+for\s+nor\s+against|Weak\s+against|Strong\s+against)"
    r"(?:\s*\|?\s*(?:Not\s+)?[Rr]eviewed\s*,\s*(?P<category>New-added|New-replaced|Not\s+changed|Amended|Deleted))?"
    r"|\((?P<paren>(?:conditional|strong)\s+recommendation\s+(?:in\s+favour\s+of|against)\s+(?:the\s+)?use"
    r"|good\s+practice\s+statement[^)]{0,60}|no\s+recommendation)(?P<certainty>[^)]{0,80})\)"
)
RECOMMENDING = re.compile(
    r"\b(?:we\s+(?:recommend|suggest)|insufficient\s+evidence\s+to\s+recommend|"
    r"(?:may|should)\s+(?:not\s+)?be\s+(?:offered|used)|recommendation\s+cannot\s+be\s+made)",
    re.I,
)
STATEMENT_START = re.compile(
    r"(?:^|[\s)])(?:(?:Recommendation\s+)?\d{1,2}\.\s*(?=For\b|There\b)"
    r"|[A-E](?:\.\d+){1,2}\s+)"
)
STRENGTH_LABEL = "Strength of recommendation"  # a recommendation section's strength; answers read it back
# The rating of the evidence that a guideline's discussion of a recommendation states ("The Work
# Group's confidence in the quality of the evidence was very low"; VA/DoD states a strength beside
# each recommendation and this rating only in its discussion). "... was moderate for acute LBP and low
# for chronic LBP" names two levels: the lower stands.
STATED_CONFIDENCE = re.compile(
    r"Work\s+Group.s\s+confidence\s+in\s+the\s+quality\s+of\s+(?:the\s+)?evidence\b[^.]{0,120}?\bwas\s+"
    r"(?P<levels>(?:very\s+)?low\b[^.]{0,60}|moderate\b[^.]{0,60}|high\b[^.]{0,60})",
    re.I,
)
CONFIDENCE_LEVELS = ("very low", "low", "moderate", "high")
# Where one discussion serves several recommendations, VA/DoD opens each one's rating with "The Work Group
# systematically reviewed evidence related to Recommendation 34"; the PDF text may split its digits ("3 5").
RATED_RECOMMENDATION = re.compile(r"related\s+to\s+Recommendation\s+(?P<number>\d(?:\s?\d)?)\b", re.I)
NUMBER_BEFORE = re.compile(r"(?P<number>\d(?:\s?\d)?)\s*\.\s*$")  # "34." or "Recommendation 34." before a statement
CONFIDENCE_LABEL = "the Work Group's confidence in the quality of the evidence"
FOOTNOTE_TAIL = re.compile(r"(?:\s*[.(|]|\s+[a-z]\b|(?<=[.)])[a-z]\b)+\s*$")


def _fold(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _words(text: str) -> str:
    """A phrase as a pattern that matches it across any run of white space."""
    return r"\s+".join(re.escape(w) for w in text.split())


def running_header(text: str) -> str | None:
    """The words that stand before most 'Page N of M' marks (a running header such as a guideline's
    title and date), at least three words long; None when the text has no such marks."""
    marks = list(PAGE_MARK.finditer(text))
    if len(marks) < 3:
        return None
    before = [text[max(0, m.start() - 400) : m.start()].split()[-HEADER_WORDS:] for m in marks]
    best = None
    for k in range(3, HEADER_WORDS + 1):
        counts = Counter(tuple(words[-k:]) for words in before if len(words) >= k)
        phrase, n = counts.most_common(1)[0] if counts else ((), 0)
        if n < len(marks) / 2:
            break
        best = " ".join(phrase)
    return best


def remove_furniture(text: str, title: str = "") -> str:
    """Drop page furniture: the running header before 'Page N of M' marks with the marks themselves,
    lines that hold only a page number, and repeats of the document's title after its first
    appearance (a running title)."""
    header = running_header(text)
    if header:
        text = re.sub(_words(header) + r"\s*(?:" + PAGE_MARK.pattern + r")?", " ", text)
    text = LONE_NUMBER.sub("", PAGE_MARK.sub(" ", text))
    if title.split():
        pattern = re.compile(_words(title), re.I)
        first = pattern.search(text)
        if first:
            text = text[: first.end()] + pattern.sub(" ", text[first.end() :])
    return text


def join_split_words(text: str, vocabulary: frozenset[str] | set[str]) -> str:
    """Join the pieces of words a PDF extraction split ("DIAGNOSI S", "i maging", "Rec\\nommendation",
    "evidence -based", "recommenda-tions"). Two neighbouring pieces join when one of them is not a word and
    together they are one (in `vocabulary` or written whole elsewhere in the text); a piece that could join
    either neighbour takes the one that makes the longer word. A hyphen stays between two words
    ("follow-up", "non-specific")."""
    text = re.sub(r"(?<=[A-Za-z]) +-(?=[A-Za-z])", "-", text)  # "evidence -based"
    text = re.sub(r"(?<=[A-Za-z])-[ \t]*\n?[ \t]*(?=[a-z])", "-", text)  # "clinician-\ndirected"
    whole = Counter(w.lower() for w in WORD.findall(text))

    def known(word: str) -> bool:
        w = word.lower()
        return w in SHORT_WORDS if len(w) <= 2 else (w in vocabulary or whole[w] >= 3)

    def stands_alone(piece: str, word: str) -> bool:
        """A piece is a word of its own, unless only because it recurs while the whole word is written out
        far more often (the VA/DoD text splits "Nei ther" 3 times and writes "neither" 103 times)."""
        p = piece.lower()
        return known(piece) and (len(p) <= 2 or p in vocabulary or whole[p] * RARER_PIECE > whole[word])

    def a_word(w: str) -> bool:
        """Whether `w` (lower case) is a word: in `vocabulary`, or written whole at least twice in the text."""
        return w in vocabulary or whole[w] >= 2

    def joined(a: str, b: str) -> bool:
        w = (a + b).lower()
        return a_word(w) and (not stands_alone(a, w) or not stands_alone(b, w))

    hyphenated = Counter(m.group(0).lower() for m in HYPHENATED.finditer(text))

    def broken(a: str, b: str) -> bool:
        """A word hyphenated where its line broke ("informa-tion", "regard-ing"), not a compound ("follow-up",
        "non-specific"): together the pieces are a word, and one of them is no dictionary word (a suffix is
        none) or the text writes the word whole far more often ("guide-lines" beside "guidelines")."""
        w = (a + b).lower()
        words = [p.lower() in SHORT_WORDS if len(p) <= 2 else p.lower() in vocabulary for p in (a, b)]
        return a_word(w) and (
            not all(words) or b.lower() in SUFFIXES or whole[w] >= RARER_PIECE * hyphenated[f"{a}-{b}".lower()]
        )

    text = HYPHENATED.sub(lambda m: m.group(1) + m.group(2) if broken(m.group(1), m.group(2)) else m.group(0), text)
    tokens = re.split(r"([A-Za-z]+)", text)  # odd indexes: letter runs; even: what separates them
    i = 1
    while i + 2 < len(tokens):
        gap, a, b = tokens[i + 1], tokens[i], tokens[i + 2]
        if gap.strip() == "" and gap.count("\n") <= 1 and joined(a, b):
            # a piece that could also join its right neighbour takes the longer word
            if (
                i + 4 < len(tokens)
                and tokens[i + 3].strip() == ""
                and not known(b)
                and joined(b, tokens[i + 4])
                and len(b + tokens[i + 4]) > len(a + b)
            ):
                i += 2
                continue
            tokens[i : i + 3] = [a + b]
            continue
        i += 2
    return "".join(tokens)


def statement_key(statement: str) -> str:
    """A recommendation's first sentence's letters: its copies differ only in spacing."""
    first = re.split(r"\.(?=\s|[A-Z]|$)", statement, maxsplit=1)[0]
    return re.sub(r"[^a-z]+", "", first.lower())


@dataclass(frozen=True)
class Recommendation:
    """One recommendation: its statement and the strength (and category) the guideline gives it."""

    statement: str
    strength: str
    start: int
    end: int
    repeat: bool = False  # a later copy of a recommendation stated before (a discussion repeats the table)
    confidence: str | None = None  # the rating of its evidence that the guideline's discussion states

    @property
    def key(self) -> str:
        """`statement_key` of the statement: the same for every copy of this recommendation."""
        return statement_key(self.statement)

    def inline(self) -> str:
        """The statement with its strength (and the stated rating of its evidence, before the
        guideline's category) inside its last sentence: one quotable sentence that carries what the
        answer reads back (in a section of its own or in running text)."""
        strength, *category = self.strength.split("; ", 1)
        if self.confidence:
            strength += f", {CONFIDENCE_LABEL}: {self.confidence}"
        return f"{self.statement.rstrip('.')} ({STRENGTH_LABEL}: {'; '.join([strength, *category])})."


def stated_confidence(discussion: str) -> str | None:
    """The one rating of the evidence (`CONFIDENCE_LEVELS`) that a recommendation's discussion
    states, the lowest where its sentence names several; None when the discussion states none, or
    several sentences state one (a discussion shared by several recommendations)."""
    found = list(STATED_CONFIDENCE.finditer(discussion))
    if len(found) != 1:
        return None
    named = re.findall(r"\b(very\s+low|low|moderate|high)\b", found[0].group("levels"), re.I)
    return min((_fold(level).lower() for level in named), key=CONFIDENCE_LEVELS.index)


def recommendations(text: str, repeats: bool = False) -> list[Recommendation]:
    """Recommendations stated with a strength: the statement runs from the last recommendation
    number before the strength ("9. For patients", "Recommendation 9.", "B.1") to the strength, and
    is kept when it uses recommending language (we recommend / suggest, may / should be offered or
    used, insufficient evidence to recommend), is not a template ("We suggest ..."), and was not
    stated before (a guideline's summary table and its discussion repeat each recommendation; the
    first is kept, and with `repeats` the later copies come too, marked `repeat`). Spans are in `text`."""
    found: list[Recommendation] = []
    seen: set[str] = set()
    previous = 0
    for match in STRENGTH.finditer(text):
        starts = list(STATEMENT_START.finditer(text, previous, match.start()))
        previous = match.end()
        if not starts:
            continue
        begin = starts[-1].end()
        statement = FOOTNOTE_TAIL.sub("", _fold(text[begin : match.start()])) + "."
        key = statement_key(statement)
        if "\u2026" in statement or "..." in statement or not RECOMMENDING.search(statement):
            continue
        repeat = key in seen
        if repeat and not repeats:
            continue
        seen.add(key)
        if match.group("paren"):
            strength = _fold(match.group("paren") + match.group("certainty"))
        else:
            strength = _fold(match.group("strength"))
            if match.group("category"):
                strength += f"; {_fold(match.group('category'))}"
        end = match.end()
        closing = re.match(r"\s*\)", text[end:])  # "(Weak for | Reviewed, New-replaced )": the strength's own brackets
        if closing and text[: match.start()].rstrip().endswith("("):
            end += closing.end()
        found.append(Recommendation(statement, strength, begin, end, repeat))
    return found


def paragraphs(text: str, target_chars: int = 1200) -> list[str]:
    """Flowing text as paragraphs of about `target_chars`, cut at sentence ends (PDF line breaks do
    not mark paragraphs)."""
    folded = _fold(text)
    out, current = [], ""
    for sentence in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", folded):
        if current and len(current) + len(sentence) > target_chars:
            out.append(current)
            current = ""
        current = f"{current} {sentence}".strip()
    if current:
        out.append(current)
    return out


BACK_MATTER = re.compile(r"\bAppendix\s+A\s*:\s*(?!.{0,80}\.{4})|\bReferences\s+1\.\s")


def without_back_matter(text: str) -> str:
    """The text before its back matter: the first appendix or numbered reference list that starts in
    the second half of the text (a table of contents early on names them too, followed by dot leaders)."""
    for match in BACK_MATTER.finditer(text, len(text) // 2):
        return text[: match.start()]
    return text


# A table's cells run together in the extracted text ("programmesA structured exercise ...",
# "modalities)Needling therapies ...", "analgesicsOpioid analgesics ..."): a run of three lowercase
# letters, or a closing parenthesis, directly followed by a capitalised word (or the article "A").
GLUED_CELLS = re.compile(r"(?:(?<=[a-z]{3})|(?<=[a-z]\)))(?=[A-Z][a-z]|A\s)")


def separate_glued_cells(text: str) -> str:
    """Put a sentence break between table cells the PDF extraction ran together, so that a
    recommendation in a table's second column starts its own sentence."""
    return GLUED_CELLS.sub(". ", text)


DISCUSSION_HEADING = re.compile(r"\s*Discussion\s+(?=[A-Z])")  # the heading the PDF text runs into its first sentence


def ratings_by_number(discussion: str) -> dict[str, str]:
    """In a discussion shared by several recommendations, the one rating each part opened by "evidence
    related to Recommendation N" states, by N (a part that states none, or several, gives none)."""
    marks = list(RATED_RECOMMENDATION.finditer(discussion))
    found = {}
    for mark, after in zip_longest(marks, marks[1:]):
        if level := stated_confidence(discussion[mark.end() : after.start() if after else len(discussion)]):
            found[re.sub(r"\s", "", mark.group("number"))] = level
    return found


def with_stated_confidence(text: str, found: list[Recommendation]) -> list[Recommendation]:
    """`found` (with their repeats) with the rating of the evidence that each recommendation's
    discussion states (`stated_confidence`): a discussion runs from a recommendation's repeated copy
    in `text` to the next recommendation; one that several recommendations share (theirs are empty)
    gives each the rating of the part that names its number (`ratings_by_number`)."""
    rated, numbered, number_of = {}, {}, {}
    for rec, after in zip_longest(found, found[1:]):
        if not rec.repeat:
            continue
        discussion = text[rec.end : after.start if after else len(text)]
        if level := stated_confidence(discussion):
            rated[rec.key] = level
        else:
            numbered.update(ratings_by_number(discussion))
        if number := NUMBER_BEFORE.search(text, max(0, rec.start - 20), rec.start):
            number_of[rec.key] = re.sub(r"\s", "", number.group("number"))
    for key, number in number_of.items():
        if key not in rated and number in numbered:
            rated[key] = numbered[number]
    return [replace(rec, confidence=rated.get(rec.key)) for rec in found]


def guideline_markdown(
    title: str, text: str, vocabulary: frozenset[str] | set[str], running_title: str = ""
) -> tuple[str, int]:
    """A guideline's cleaned text, without its appendices and reference list, as markdown with each
    recommendation in a section of its own, in reading order between the paragraphs around it;
    returns (markdown, recommendations). A recommendation repeated in the discussion stays in its
    running text, rewritten with its strength inside the sentence (`Recommendation.inline`); both
    copies carry the rating of the evidence that its discussion states (`with_stated_confidence`)."""
    clean = without_back_matter(
        separate_glued_cells(join_split_words(remove_furniture(text, running_title), vocabulary))
    )
    parts, running, last, number = [f"# {title}"], "", 0, 0
    for rec in with_stated_confidence(clean, recommendations(clean, repeats=True)):
        running += clean[last : rec.start]
        heading = DISCUSSION_HEADING.match(clean, rec.end)  # would open the next quoted sentence
        last = heading.end() if heading else rec.end
        if rec.repeat:
            running += f" {rec.inline()} "
            continue
        body = paragraphs(running)
        if body:
            parts += ["## Text", *body]
        number += 1
        parts += [f"## Recommendation {number}", rec.inline()]
        running = ""
    rest = paragraphs(running + clean[last:])
    if rest:
        parts += ["## Text", *rest]
    return "\n\n".join(parts) + "\n", number
