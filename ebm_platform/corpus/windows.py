"""Chunking (SR-RAG App. A): heading split -> atomic blocks -> groups -> evidence windows.

Tokens are counted as word and punctuation tokens (regex ``\\w+|[^\\w\\s]``), a deterministic,
model-free proxy for the paper's LLM tokens. Windows hold at most ``window_tokens`` tokens,
consecutive windows of a chunk overlap by whole units of at most ``overlap`` tokens, and a chunk
(one group of adjacent blocks) yields at most ``max_windows`` windows.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

TOKEN = re.compile(r"\w+|[^\w\s]")
HEADING = re.compile(r"^(#{1,6})\s+(.*\S)\s*$")
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
CAPTION = re.compile(r"^(?:Table|Tab\.)\s*\w+", re.I)
# Abbreviations whose full stop ends no sentence: "42% vs. 30% (P = 0.01)" was cut after "vs." in
# 328 of Evidence Inference's 4,366 evidence annotations, and "et al. (2019)" and "Fig. 2" cut theirs.
ABBREVIATIONS = ("vs", "e.g", "i.e", "et al", "fig", "figs", "approx", "cf")
SENTENCE_END = re.compile(
    r"(?<=[.!?])" + "".join(rf"(?<!\b(?i:{re.escape(a)})\.)" for a in ABBREVIATIONS) + r"\s+(?=[A-Z0-9(\[])"
)


SENTENCE_CHARS = (25, 600)  # shorter or longer "sentences" are headings, table rows or run-on text


def flatten(text: str) -> str:
    """One line: runs of line breaks (and the space around them) become one space."""
    return re.sub(r"\s*\n+\s*", " ", text).strip()


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of a window that an answer may quote (25-600 characters
    once flattened), split where SENTENCE_END matches."""
    spans, start = [], 0
    for gap in [*SENTENCE_END.finditer(text), None]:
        end = gap.start() if gap else len(text)
        piece = text[start:end]
        lead = len(piece) - len(piece.lstrip())
        if SENTENCE_CHARS[0] <= len(flatten(piece)) <= SENTENCE_CHARS[1]:
            spans.append((start + lead, start + len(piece.rstrip())))
        start = gap.end() if gap else end
    return spans


def count_tokens(text: str) -> int:
    return len(TOKEN.findall(text))


@dataclass(frozen=True)
class Block:
    """An atomic block (paragraph, list item or table row) with its character span."""

    section: str
    text: str
    start: int
    end: int
    kind: str = "paragraph"

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)


@dataclass(frozen=True)
class WindowParams:
    window_tokens: int = 320
    overlap: int = 64
    max_windows: int = 3
    group_similarity: float = 0.30

    @property
    def chunk_capacity(self) -> int:
        """Most tokens one chunk may hold and still fit in `max_windows` overlapping windows."""
        return self.window_tokens + (self.max_windows - 1) * (self.window_tokens - self.overlap)


def split_blocks(markdown: str) -> list[Block]:
    """Split markdown by headings, then into paragraphs, list items and table rows."""
    blocks: list[Block] = []
    headings: list[str] = []
    para: list[tuple[int, str]] = []
    position = 0

    def flush() -> None:
        if para:
            start = para[0][0]
            end = para[-1][0] + len(para[-1][1])
            text = " ".join(line.strip() for _, line in para).strip()
            if text:
                blocks.append(Block(" > ".join(headings), text, start, end))
            para.clear()

    for line in markdown.splitlines(keepends=True):
        content = line.rstrip("\r\n")
        heading = HEADING.match(content)
        if heading:
            flush()
            level = len(heading.group(1))
            headings[:] = headings[: level - 1] + [heading.group(2).strip()]
        elif not content.strip():
            flush()
        elif content.lstrip().startswith("|"):
            flush()
            blocks.append(Block(" > ".join(headings), content.strip(), position, position + len(content), "table_row"))
        elif LIST_ITEM.match(content):
            flush()
            blocks.append(Block(" > ".join(headings), content.strip(), position, position + len(content), "list_item"))
        else:
            para.append((position, content))
        position += len(line)
    flush()
    return blocks


def is_caption(block: Block) -> bool:
    return block.kind == "paragraph" and bool(CAPTION.match(block.text))


def similarity_groups(blocks: Sequence[Block], vectors: np.ndarray, params: WindowParams) -> list[int]:
    """Offline grouping: start a new group at a heading change, when a neighbour's cosine
    similarity falls below `group_similarity`, or when the chunk would overflow its capacity.
    Table rows stay with their table and its caption (their vectors are not consulted)."""
    groups: list[int] = []
    group, size = 0, 0
    for i, block in enumerate(blocks):
        if i > 0:
            prev = blocks[i - 1]
            same_table = block.kind == "table_row" and (prev.kind == "table_row" or is_caption(prev))
            similar = not same_table and float(vectors[i] @ vectors[i - 1]) >= params.group_similarity
            if (
                block.section != prev.section
                or not (same_table or similar)
                or size + block.tokens > params.chunk_capacity
            ):
                group, size = group + 1, 0
        groups.append(group)
        size += block.tokens
    return groups


@dataclass(frozen=True)
class Unit:
    text: str
    start: int
    end: int
    tokens: int


def _units(block: Block, budget: int) -> list[Unit]:
    """A block as packing units: whole when it fits, else sentences, else token slices."""
    if block.tokens <= budget:
        return [Unit(block.text, block.start, block.end, block.tokens)]
    units: list[Unit] = []
    offset = 0
    for sentence in SENTENCE_END.split(block.text):
        at = block.text.find(sentence, offset)
        offset = at + len(sentence)
        tokens = list(TOKEN.finditer(sentence))
        for i in range(0, len(tokens), budget):
            piece = tokens[i : i + budget]
            s, e = piece[0].start(), piece[-1].end()
            units.append(Unit(sentence[s:e], block.start + at + s, block.start + at + e, len(piece)))
    return units


def pack_windows(units: Sequence[Unit], params: WindowParams) -> list[list[Unit]]:
    """Greedy packing into windows <= window_tokens; the next window restarts at trailing
    units of the previous one totalling <= overlap tokens."""
    windows: list[list[Unit]] = []
    i, n = 0, len(units)
    while i < n:
        j, size = i, 0
        while j < n and (j == i or size + units[j].tokens <= params.window_tokens):
            size += units[j].tokens
            j += 1
        windows.append(list(units[i:j]))
        if j >= n:
            break
        k, overlap = j, 0
        while k - 1 > i and overlap + units[k - 1].tokens <= params.overlap:
            k -= 1
            overlap += units[k].tokens
        i = k
    return windows


Grouper = Callable[[Sequence[Block]], list[int]]


def build_windows(doc_id: str, markdown: str, params: WindowParams, grouper: Grouper) -> list[dict]:
    """Evidence windows of one document with stable ids, chunk ids and character spans."""
    blocks = split_blocks(markdown)
    if not blocks:
        return []
    group_ids = grouper(blocks)
    rows: list[dict] = []
    chunks: dict[int, list[Block]] = {}
    for block, gid in zip(blocks, group_ids):
        chunks.setdefault(gid, []).append(block)
    chunk_no = 0
    for gid in sorted(chunks):
        members = chunks[gid]
        units = [u for b in members for u in _units(b, params.window_tokens)]
        packed = pack_windows(units, params)
        for w, window_units in enumerate(packed):
            if w and w % params.max_windows == 0:
                chunk_no += 1
            text = "\n\n".join(u.text for u in window_units)
            ordinal = len(rows)
            digest = hashlib.sha1(f"{doc_id}|{ordinal}|{text}".encode()).hexdigest()[:10]
            rows.append(
                {
                    "window_id": f"{doc_id}-{digest}",
                    "doc_id": doc_id,
                    "ordinal": ordinal,
                    "chunk": chunk_no,
                    "section": members[0].section,
                    "text": text,
                    "n_tokens": count_tokens(text),
                    "char_start": window_units[0].start,
                    "char_end": window_units[-1].end,
                }
            )
        chunk_no += 1
    return rows
