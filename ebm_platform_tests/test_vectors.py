"""The vector helpers the index, the graph and the query path share."""

from __future__ import annotations

import numpy as np

from ebm_platform.vectors import embedded_once, unit_rows


def test_unit_rows_scales_each_row_and_keeps_zero_rows() -> None:
    rows = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    assert np.allclose(rows, [[0.6, 0.8], [0.0, 0.0]]) and rows.dtype == np.float32


def test_embedded_once_encodes_each_distinct_text_once_and_returns_what_the_encoder_gives() -> None:
    calls: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        calls.append(list(texts))
        return np.array([[len(t), t.count("a")] for t in texts], dtype=np.float32).reshape(len(texts), 2)

    once = embedded_once(embed, limit=3)
    texts = ["pain", "placebo", "pain"]
    assert np.array_equal(once(texts), embed(texts))
    calls.clear()
    assert np.array_equal(once(["placebo", "pain"]), embed(["placebo", "pain"])[:2]) and len(calls) == 1
    calls.clear()
    once(["range of motion", "pain"])  # only the new text goes to the encoder
    assert calls == [["range of motion"]]
    once(["walking speed"])  # beyond the limit the kept vectors start afresh
    calls.clear()
    once(["pain"])
    assert calls == [["pain"]]
    assert once([]).shape == (0, 2)
