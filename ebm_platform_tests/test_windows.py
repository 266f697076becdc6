import csv
import re

import numpy as np
import polars as pl

from ebm_platform.corpus.readers import read_jats
from ebm_platform.corpus.windows import (
    Block,
    Unit,
    WindowParams,
    build_windows,
    count_tokens,
    pack_windows,
    sentence_spans,
    similarity_groups,
    split_blocks,
)

MARKDOWN = """# Title

## Methods

First paragraph about the trial.
Still the first paragraph.

- list item one
- list item two

| a | b |
| 1 | 2 |

## Results

Pain fell.
"""


def test_split_blocks_keeps_atoms_and_offsets():
    blocks = split_blocks(MARKDOWN)
    kinds = [b.kind for b in blocks]
    assert kinds == ["paragraph", "list_item", "list_item", "table_row", "table_row", "paragraph"]
    assert blocks[0].section == "Title > Methods" and blocks[-1].section == "Title > Results"
    assert blocks[0].text == "First paragraph about the trial. Still the first paragraph."
    for block in blocks:
        assert MARKDOWN[block.start : block.end].split()[0] == block.text.split()[0]


def test_pack_windows_budget_and_overlap():
    units = [Unit(f"u{i}", i, i + 1, 50) for i in range(20)]
    params = WindowParams(window_tokens=320, overlap=64)
    windows = pack_windows(units, params)
    assert all(sum(u.tokens for u in w) <= 320 for w in windows)
    for a, b in zip(windows, windows[1:]):
        shared = [u for u in b if u in a]
        assert sum(u.tokens for u in shared) <= 64
        assert b[-1].start > a[-1].start  # always progresses
    assert windows[-1][-1] == units[-1]


def test_similarity_groups_split_on_topic_and_capacity():
    blocks = [Block("s", "x " * 10, 0, 1), Block("s", "y " * 10, 1, 2), Block("t", "z " * 10, 2, 3)]
    vectors = np.array([[1, 0], [1, 0], [1, 0]], dtype=np.float32)
    assert similarity_groups(blocks, vectors, WindowParams()) == [0, 0, 1]  # heading change
    vectors = np.array([[1, 0], [0, 1], [0, 1]], dtype=np.float32)
    assert similarity_groups(blocks[:2], vectors[:2], WindowParams()) == [0, 1]  # dissimilar


def test_real_article_windows_respect_the_paper_budget(datasets_dir):
    path = datasets_dir / "evidence_inference" / "xml" / "PMC1065070.nxml"
    doc = read_jats(path.read_bytes())
    params = WindowParams()
    one_group = lambda blocks: [0] * len(blocks)  # noqa: E731 - worst case: one huge group
    rows = build_windows(doc.doc_id, doc.text, params, one_group)
    assert rows and all(r["n_tokens"] <= params.window_tokens for r in rows)
    per_chunk = {}
    for r in rows:
        per_chunk[r["chunk"]] = per_chunk.get(r["chunk"], 0) + 1
    assert max(per_chunk.values()) <= params.max_windows
    again = build_windows(doc.doc_id, doc.text, params, one_group)
    assert [r["window_id"] for r in rows] == [r["window_id"] for r in again]
    assert len({r["window_id"] for r in rows}) == len(rows)
    for r in rows[:5]:  # spans point back into the document
        assert doc.text[r["char_start"] : r["char_end"]].split()[:3] == r["text"].split()[:3]
    assert count_tokens("VAS (0-10) fell.") == 8


def test_a_sentence_is_not_cut_after_an_abbreviation(datasets_dir):
    """Abbreviations ("vs.", "et al.", "Fig.") end no sentence: the result an answer quotes stays whole."""
    text = (
        "Pain fell more with exercise than with usual care (42% vs. 30%, P = 0.01) at 12 weeks. "
        "As Smith et al. (2019) found, Fig. 2 shows it. Adverse events were rare overall. VS. Placebo it was "
        "better in all of the outcomes."
    )
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "Pain fell more with exercise than with usual care (42% vs. 30%, P = 0.01) at 12 weeks.",
        "As Smith et al. (2019) found, Fig. 2 shows it.",
        "Adverse events were rare overall.",
        "VS. Placebo it was better in all of the outcomes.",
    ]
    # Evidence Inference's annotated evidence with a "vs." inside: each is one sentence
    with (datasets_dir / "evidence_inference" / "v2_annotations.csv").open(newline="") as f:
        evidence = [row["Annotations"] for row in csv.DictReader(f) if " vs. " in row["Annotations"]]
    assert len(evidence) > 100
    whole = [
        e for e in evidence if 25 <= len(e) <= 600 and not re.search(r"[.!?]\s+[A-Z0-9(\[]", e.replace("vs. ", ""))
    ]
    assert whole and all(sentence_spans(e) == [(0, len(e.rstrip()))] for e in whole)


def test_windowing_a_partition_holds_one_batch_of_block_vectors(datasets_dir, monkeypatch):
    """Offline grouping embeds the partition's blocks batch by batch and windows each document as soon
    as its blocks are in: the same windows as with every block embedded up front, while the grouper
    never holds much more than one batch of vectors (before, it held every block's to the end)."""
    import hashlib
    from pathlib import Path

    from ebm_platform.corpus import chunking
    from ebm_platform.llm.client import LLMClient

    def embed(texts: list[str]) -> np.ndarray:  # a vector per text that does not depend on its batch
        seeds = [int(hashlib.sha1(t.encode()).hexdigest()[:8], 16) for t in texts]
        return np.stack([np.random.default_rng(s).normal(size=8) for s in seeds]).astype(np.float32)

    folder = Path(datasets_dir) / "evidence_inference" / "xml"
    documents = [
        {
            "doc_id": p.stem,
            "text": read_jats(p.read_bytes()).text,
            "grade": "C",
            "title": "",
            "year": 2020,
            "source": "",
        }
        for p in sorted(folder.glob("*.nxml"))[:6]
    ]
    monkeypatch.setattr(chunking, "PRECOMPUTE_BATCH", 10**9)
    whole = chunking.window_documents(documents, chunking.BlockGrouper(WindowParams(), LLMClient(), embed))

    held: list[int] = []
    grouper = chunking.BlockGrouper(WindowParams(), LLMClient(), embed)
    real_precompute = grouper.precompute

    def precompute(texts: list[str]) -> None:
        real_precompute(texts)
        held.append(len(grouper._vectors_of))

    monkeypatch.setattr(grouper, "precompute", precompute)
    monkeypatch.setattr(chunking, "PRECOMPUTE_BATCH", 40)
    monkeypatch.setattr(chunking, "PROGRESS_EVERY", 3)
    said: list[str] = []
    batched = chunking.window_documents(documents, grouper, said.append)
    assert batched == whole and len(whole) > 20
    windowed = [line.split(" documents")[0] for line in said if line.startswith("windowed")]
    assert windowed == ["windowed 3/6", "windowed 6/6"]  # the last line once
    largest_document = max(sum(b.kind != "table_row" for b in split_blocks(d["text"])) for d in documents)
    assert len(held) > 5 and max(held) <= 40 + largest_document and not grouper._vectors_of

    # a partition is windowed DOCUMENT_BATCH documents at a time: the same windows, progress over all of them
    monkeypatch.setattr(chunking, "DOCUMENT_BATCH", 4)
    said.clear()
    parts = list(chunking.window_partition(pl.DataFrame(documents), grouper, said.append))
    assert len(parts) == 2 and [w for part in parts for w in part] == whole
    windowed = [line for line in said if line.startswith("windowed")]
    assert [line.split(" documents")[0] for line in windowed] == ["windowed 3/6", "windowed 4/6", "windowed 6/6"]
    assert windowed[1].endswith(f" {len(parts[0])} windows") and windowed[2].endswith(f" {len(whole)} windows")
