"""Windowing a set of documents, with grouping by the LLM client or by embeddings offline."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from itertools import groupby

import numpy as np
import polars as pl

from ebm_platform.corpus.windows import Block, WindowParams, build_windows, similarity_groups, split_blocks
from ebm_platform.llm.client import LLMClient
from ebm_platform.llm.prompts import GROUPING_PROMPT, GROUPING_SCHEMA, fill

Embedder = Callable[[list[str]], np.ndarray]
EMBED_TOKENS = 64  # blocks are embedded for grouping from their first 64 word pieces
PRECOMPUTE_BATCH = 2048  # blocks per embedding call when a whole partition is windowed
PROGRESS_EVERY = 25  # documents between progress lines (and the last)
DOCUMENT_BATCH = 200  # documents windowed at a time by `window_partition`


def _valid_group_ids(ids: list[int], n: int) -> bool:
    return len(ids) == n and (n == 0 or ids[0] == 0) and all(0 <= b - a <= 1 for a, b in zip(ids, ids[1:]))


class BlockGrouper:
    """Groups a document's blocks: one LLM call per section, or neighbour similarity offline."""

    def __init__(self, params: WindowParams, client: LLMClient, embedder: Embedder) -> None:
        self.params, self.client, self.embedder = params, client, embedder
        self.llm_sections = 0
        self.fallback_sections = 0
        self._vectors_of: dict[str, np.ndarray] = {}
        self._dim = 1  # the embedder's width, once it has embedded a block

    def precompute(self, texts: list[str]) -> None:
        """Embed many blocks' texts in one call (sorted and batched by the encoder), for reuse."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors_of))
        if todo:
            vectors = self.embedder(todo)
            self._dim = vectors.shape[1]
            self._vectors_of.update(zip(todo, vectors))

    def forget(self, texts: list[str]) -> None:
        """Drop the vectors of blocks no document still to be windowed contains."""
        for text in texts:
            self._vectors_of.pop(text, None)

    def __call__(self, blocks: Sequence[Block]) -> list[int]:
        vectors = self._vectors(blocks)
        offline_ids = similarity_groups(blocks, vectors, self.params)
        if self.client.offline:
            return offline_ids
        ids: list[int] = []
        start = 0
        for section, members in groupby(range(len(blocks)), key=lambda i: blocks[i].section):
            idx = list(members)
            local = self._llm_section(section, [blocks[i] for i in idx])
            if local is None:
                self.fallback_sections += 1
                local_offline = offline_ids[idx[0] : idx[-1] + 1]
                local = [g - local_offline[0] for g in local_offline]
            ids.extend(start + g for g in local)
            start = ids[-1] + 1
        return _cap_groups(blocks, ids, self.params)

    def _vectors(self, blocks: Sequence[Block]) -> np.ndarray:
        """Embeddings of non-table blocks; table rows get zero vectors (grouped by structure)."""
        prose = [i for i, b in enumerate(blocks) if b.kind != "table_row"]
        self.precompute([blocks[i].text for i in prose])
        vectors = np.zeros((len(blocks), self._dim), dtype=np.float32)
        for i in prose:
            vectors[i] = self._vectors_of[blocks[i].text]
        return vectors

    def _llm_section(self, section: str, blocks: list[Block]) -> list[int] | None:
        numbered = "\n".join(f"[{i}] {b.text[:600]}" for i, b in enumerate(blocks))
        prompt = fill(GROUPING_PROMPT, {"section": section or "(untitled)", "blocks": numbered}, n=len(blocks))
        try:
            result = self.client.complete_json(
                "group_blocks", prompt, GROUPING_SCHEMA, offline=lambda: {"group_ids": []}
            )
        except Exception:
            return None
        ids = result.data["group_ids"]
        if not _valid_group_ids(ids, len(blocks)):
            self.client.usage.invalid_outputs += 1
            return None
        self.llm_sections += 1
        return ids


def _cap_groups(blocks: Sequence[Block], ids: list[int], params: WindowParams) -> list[int]:
    """Split LLM groups that exceed the chunk capacity (at most `max_windows` windows)."""
    out: list[int] = []
    group, size, previous = -1, 0, None
    for block, gid in zip(blocks, ids):
        if gid != previous or size + block.tokens > params.chunk_capacity:
            group, size = group + 1, 0
        out.append(group)
        size += block.tokens
        previous = gid
    return out


def window_partition(
    documents: pl.DataFrame, grouper: BlockGrouper, progress: Callable[[str], None] | None = None
) -> Iterator[list[dict]]:
    """`window_documents` of a partition's documents, DOCUMENT_BATCH at a time: only one batch's texts,
    blocks and windows are ever Python objects (a block repeated across batches is embedded again)."""
    windows = 0
    for first in range(0, documents.height, DOCUMENT_BATCH):
        batch = documents.slice(first, DOCUMENT_BATCH).to_dicts()
        rows = window_documents(batch, grouper, progress, (first, windows), documents.height)
        windows += len(rows)
        yield rows


def window_documents(
    documents: list[dict],
    grouper: BlockGrouper,
    progress: Callable[[str], None] | None = None,
    before: tuple[int, int] = (0, 0),
    total: int | None = None,
) -> list[dict]:
    """Evidence windows of every document, carrying the document's grade and metadata. Offline, the
    prose blocks of all documents are embedded in large batches (PRECOMPUTE_BATCH, in document
    order); each document is windowed as soon as its last block is embedded, and a block's vector
    is dropped once no later document repeats its text, so that the vectors held are a batch's, not
    the partition's. Progress counts on from the documents and windows `before` this batch of a partition
    of `total` documents."""
    rows: list[dict] = []
    total = len(documents) if total is None else total
    first, windows_before = before

    def window(n: int) -> None:
        doc = documents[n]
        for found in build_windows(doc["doc_id"], doc["text"], grouper.params, grouper):
            found.update(grade=doc["grade"], title=doc["title"], year=doc["year"], source=doc["source"])
            rows.append(found)
        if progress and ((first + n + 1) % PROGRESS_EVERY == 0 or n + 1 == len(documents)):
            progress(f"windowed {first + n + 1}/{total} documents, {windows_before + len(rows)} windows")

    done = 0
    if grouper.client.offline:
        per_document = [[b.text for b in split_blocks(d["text"]) if b.kind != "table_row"] for d in documents]
        prose = [text for texts in per_document for text in texts]
        still_needed = Counter(prose)
        last_block = np.cumsum([len(texts) for texts in per_document])
        for start in range(0, len(prose), PRECOMPUTE_BATCH):
            grouper.precompute(prose[start : start + PRECOMPUTE_BATCH])
            embedded = min(start + PRECOMPUTE_BATCH, len(prose))
            if progress:
                progress(f"embedded {embedded}/{len(prose)} blocks for grouping")
            while done < len(documents) and last_block[done] <= embedded:
                window(done)
                still_needed.subtract(per_document[done])
                grouper.forget([text for text in per_document[done] if still_needed[text] <= 0])
                done += 1
    for n in range(done, len(documents)):
        window(n)
    return rows
