"""Bootstrap 95% intervals: of a mean over questions, of a paired difference, of any statistic
over resampled units (articles for pooled token F1). Percentile bootstrap (scipy), seeded."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.stats import bootstrap

RESAMPLES = 2000
SEED = 13


def interval(values: np.ndarray, seed: int = SEED, resamples: int = RESAMPLES) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of the mean (nan with fewer than two values; the value
    itself when all values are equal)."""
    values = np.asarray(values, dtype=float)
    if len(values) < 2:
        return np.nan, np.nan
    if np.ptp(values) == 0:
        return float(values[0]), float(values[0])
    ci = bootstrap(
        (values,), np.mean, n_resamples=resamples, method="percentile", random_state=seed
    ).confidence_interval
    return float(ci.low), float(ci.high)


def unit_interval(
    units: int, statistic: Callable[[np.ndarray], float], seed: int = SEED, resamples: int = RESAMPLES
) -> tuple[float, float]:
    """Percentile bootstrap 95% interval of `statistic(indices)` over resampled units (e.g. a
    token F1 pooled over resampled articles; a difference of two such F1s is paired by design)."""
    if units < 2:
        return np.nan, np.nan
    ci = bootstrap(
        (np.arange(units),), statistic, n_resamples=resamples, method="percentile", vectorized=False, random_state=seed
    ).confidence_interval
    return float(ci.low), float(ci.high)


def paired_difference(a: np.ndarray, b: np.ndarray, seed: int = SEED, digits: int | None = None) -> dict[str, float]:
    """mean(a - b) over paired values with its bootstrap 95% interval and wins / ties / losses of a
    (the difference and its interval rounded to `digits` when given, for a report)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    low, high = interval(a - b, seed)
    difference = float((a - b).mean()) if len(a) else np.nan
    if digits is not None:
        difference, low, high = (round(v, digits) for v in (difference, low, high))
    return {
        "n": int(len(a)),
        "difference": difference,
        "low": low,
        "high": high,
        "wins": int((a > b).sum()),
        "ties": int((a == b).sum()),
        "losses": int((a < b).sum()),
    }
