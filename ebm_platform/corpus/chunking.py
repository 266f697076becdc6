"""Windowing a set of documents, with grouping by the LLM client or by embeddings offline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import groupby

import numpy as np

from ebm_platform.corpus.windows import Block, WindowParams, build_windows, similarity_groups, split_blocks
from ebm_platform.llm.client import LLMClient
from ebm_platform.llm.prompts import GROUPING_PROMPT, GROUPING_SCHEMA, fill

Embedder = Callable[[list[str]], np.ndarray]
EMBED_TOKENS = 64  # blocks are embedded for grouping from their first 64 word pieces
PRECOMPUTE_BATCH = 2048  # blocks per embedding call when a whole partition is windowed


def _valid_group_ids(ids: list[int], n: int) -> bool:
    return len(ids) == n and (n == 0 or ids[0] == 0) and all(0 <= b - a <= 1 for a, b in zip(ids, ids[1:]))


class BlockGrouper:
    """Groups a document's blocks: one LLM call per section, or neighbour similarity offline."""

    def __init__(self, params: WindowParams, client: LLMClient, embedder: Embedder) -> None:
        self.params, self.client, self.embedder = params, client, embedder
        self.llm_sections = 0
        self.fallback_sections = 0
        self._vectors_of: dict[str, np.ndarray] = {}

    def precompute(self, texts: list[str]) -> None:
        """Embed many blocks' texts in one call (sorted and batched by the encoder), for reuse."""
        todo = list(dict.fromkeys(t for t in texts if t not in self._vectors_of))
        if todo:
            self._vectors_of.update(zip(todo, self.embedder(todo)))

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
        dim = len(next(iter(self._vectors_of.values()))) if self._vectors_of else 1
        vectors = np.zeros((len(blocks), dim), dtype=np.float32)
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


def window_documents(
    documents: list[dict], grouper: BlockGrouper, progress: Callable[[str], None] | None = None
) -> list[dict]:
    """Evidence windows of every document, carrying the document's grade and metadata. Offline, the
    prose blocks of all documents are embedded up front in large length-sorted batches."""
    rows: list[dict] = []
    if grouper.client.offline:
        prose = [b.text for doc in documents for b in split_blocks(doc["text"]) if b.kind != "table_row"]
        for start in range(0, len(prose), PRECOMPUTE_BATCH):
            grouper.precompute(prose[start : start + PRECOMPUTE_BATCH])
            if progress:
                progress(f"embedded {min(start + PRECOMPUTE_BATCH, len(prose))}/{len(prose)} blocks for grouping")
    for n, doc in enumerate(documents, 1):
        for window in build_windows(doc["doc_id"], doc["text"], grouper.params, grouper):
            window.update(grade=doc["grade"], title=doc["title"], year=doc["year"], source=doc["source"])
            rows.append(window)
        if progress and (n % 25 == 0 or n == len(documents)):
            progress(f"windowed {n}/{len(documents)} documents, {len(rows)} windows")
    return rows
