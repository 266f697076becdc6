"""Vector arithmetic the index, the graph and the encoder share."""

from __future__ import annotations

import numpy as np


def unit_rows(m: np.ndarray) -> np.ndarray:
    """Each row of `m` scaled to unit L2 norm (an all-zero row stays zero), in `m`'s float type."""
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)
