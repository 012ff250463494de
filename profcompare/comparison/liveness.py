"""The ``liveness`` table of a comparison: the two reports' liveness curves aligned step by
step, by program-name sequence where possible, else by position."""

from __future__ import annotations

import numpy as np
import pandas as pd

from profcompare.comparison.join import _take
from profcompare.model import Report

#: Work budget (diagonal probes + equal steps followed) of the program-name alignment of two
#: liveness curves' differing middle parts; beyond it the curves are aligned by position.
#: Chosen so that the worst accepted case takes about half a second in CPython.
_ALIGN_WORK_LIMIT = 2_000_000
#: Aligned by program name only when at least this share of steps pair up with equal names
#: (2 x pairs / (base steps + new steps)); otherwise the curves are aligned by position.
_ALIGN_MIN_SIMILARITY = 0.5


# --------------------------------------------------------------------------------------------
# Liveness alignment


def _pairs_by_position(n_base: int, n_new: int, base_offset: int = 0, new_offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Pair step i of base with step i of new; the longer side's tail stands alone."""
    length = max(n_base, n_new)
    position = np.arange(length, dtype=np.int64)
    base_index = np.where(position < n_base, position + base_offset, -1)
    new_index = np.where(position < n_new, position + new_offset, -1)
    return base_index, new_index


def _myers_matches(base: list[int], new: list[int], budget: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Pairs (base position, new position) of a longest common subsequence of two sequences.

    Myers' O((N+M)D) difference algorithm (D = number of inserted + deleted steps), which,
    unlike difflib's longest-block heuristic, stays optimal on the periodic program sequences
    of loops and repeated layers. Returns None when the work (diagonal probes + equal steps
    followed) would exceed ``budget``, so the caller can fall back to aligning by position.
    """
    n, m = len(base), len(new)
    d_limit = min(n + m, int(budget**0.5) + 1)
    offset = d_limit + 1
    furthest = [0] * (2 * d_limit + 3)
    trace: list[list[int]] = []
    # Each side ends in padding equal to nothing (a path runs at most d_limit + 1 steps past
    # an end), so following a diagonal needs one comparison per step, not three.
    end_base, end_new = object(), object()
    padded_base = [*base, *[end_base] * (d_limit + 2)]
    padded_new = [*new, *[end_new] * (d_limit + 2)]
    work = 0
    found = -1
    for d in range(d_limit + 1):
        # slot i of furthest is diagonal k = i - offset: the furthest x reached on it
        first, last = offset - d, offset + d
        trace.append(furthest[first - 1 : last + 2])
        for i in range(first, last + 1, 2):
            if i == first or (i != last and furthest[i - 1] < furthest[i + 1]):
                x = furthest[i + 1]
            else:
                x = furthest[i - 1] + 1
            y = x - i + offset
            if padded_base[x] == padded_new[y]:
                start = x
                x += 1
                y += 1
                while padded_base[x] == padded_new[y]:
                    x += 1
                    y += 1
                work += x - start
            furthest[i] = x
            if x >= n and y >= m:
                found = d
                break
        if found >= 0:
            break
        work += d + 1  # one probe per diagonal
        if work > budget:
            return None
    if found < 0:
        return None
    base_pairs: list[int] = []
    new_pairs: list[int] = []
    x, y = n, m
    for d in range(found, -1, -1):
        previous = trace[d]
        k = x - y
        if d == 0:
            mid_x, mid_y, prev_x, prev_y = 0, 0, 0, 0
        else:
            if k == -d or (k != d and previous[k - 1 + d + 1] < previous[k + 1 + d + 1]):
                prev_k = k + 1
                prev_x = previous[prev_k + d + 1]
                prev_y = prev_x - prev_k
                mid_x, mid_y = prev_x, prev_y + 1
            else:
                prev_k = k - 1
                prev_x = previous[prev_k + d + 1]
                prev_y = prev_x - prev_k
                mid_x, mid_y = prev_x + 1, prev_y
        while x > mid_x and y > mid_y:
            x -= 1
            y -= 1
            base_pairs.append(x)
            new_pairs.append(y)
        x, y = prev_x, prev_y
    return np.asarray(base_pairs[::-1], dtype=np.int64), np.asarray(new_pairs[::-1], dtype=np.int64)


def _pairs_from_matches(
    base_matches: np.ndarray, new_matches: np.ndarray, n_base: int, n_new: int
) -> tuple[np.ndarray, np.ndarray]:
    """Full alignment from matched pairs: each gap between matches is paired by position."""
    # Gap g is the stretch before match g (gap len(matches) runs to the end of both sides).
    starts_base = np.r_[-1, base_matches] + 1
    starts_new = np.r_[-1, new_matches] + 1
    gap_base = np.r_[base_matches, n_base] - starts_base
    gap_new = np.r_[new_matches, n_new] - starts_new
    pieces: list[tuple[np.ndarray, np.ndarray]] = []
    done = 0
    for gap in np.flatnonzero((gap_base > 0) | (gap_new > 0)):
        if gap > done:
            pieces.append((base_matches[done:gap], new_matches[done:gap]))
        pieces.append(
            _pairs_by_position(int(gap_base[gap]), int(gap_new[gap]), int(starts_base[gap]), int(starts_new[gap]))
        )
        done = int(gap)
    if done < len(base_matches):
        pieces.append((base_matches[done:], new_matches[done:]))
    if not pieces:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return (
        np.concatenate([p[0] for p in pieces]).astype(np.int64),
        np.concatenate([p[1] for p in pieces]).astype(np.int64),
    )


def _align_sequences(base_codes: np.ndarray, new_codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """Align two program-name code sequences; returns (base_index, new_index, method).

    Steps with equal names on a longest common subsequence are paired; the differing stretches
    between them are paired by position, the longer side's extra steps standing alone. A common
    prefix and suffix are matched with numpy first, so only the differing middle goes to the
    (pure Python) difference algorithm, and only within a work budget; beyond it, or when
    less than half the steps pair up, the curves are aligned by position (method "position").
    """
    n_base, n_new = len(base_codes), len(new_codes)
    shortest = min(n_base, n_new)
    if shortest == 0:
        base_index, new_index = _pairs_by_position(n_base, n_new)
        return base_index, new_index, "position"
    differs = base_codes[:shortest] != new_codes[:shortest]
    prefix = int(np.argmax(differs)) if differs.any() else shortest
    rest = shortest - prefix
    tail_differs = base_codes[n_base - rest :][::-1] != new_codes[n_new - rest :][::-1]
    suffix = int(np.argmax(tail_differs)) if tail_differs.any() else rest
    mid_base = base_codes[prefix : n_base - suffix]
    mid_new = new_codes[prefix : n_new - suffix]

    matches: tuple[np.ndarray, np.ndarray] | None = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    if len(mid_base) and len(mid_new):
        matches = _myers_matches(mid_base.tolist(), mid_new.tolist(), _ALIGN_WORK_LIMIT)
    if matches is None:
        return (*_pairs_by_position(n_base, n_new), "position")
    matched = prefix + suffix + len(matches[0])
    if 2.0 * matched / (n_base + n_new) < _ALIGN_MIN_SIMILARITY:
        return (*_pairs_by_position(n_base, n_new), "position")
    base_matches = np.r_[np.arange(prefix), matches[0] + prefix, np.arange(n_base - suffix, n_base)].astype(np.int64)
    new_matches = np.r_[np.arange(prefix), matches[1] + prefix, np.arange(n_new - suffix, n_new)].astype(np.int64)
    base_index, new_index = _pairs_from_matches(base_matches, new_matches, n_base, n_new)
    return base_index, new_index, "program"


def _compare_liveness(base: Report, new: Report) -> pd.DataFrame:
    b, n = base.liveness_per_step(), new.liveness_per_step()
    base_programs = b["program"].to_numpy(dtype=object)
    new_programs = n["program"].to_numpy(dtype=object)
    codes, _ = pd.factorize(pd.Series(np.r_[base_programs, new_programs], dtype=object), use_na_sentinel=False)
    codes = codes.astype(np.int64)
    bi, ni, method = _align_sequences(codes[: len(b)], codes[len(b) :])

    def nullable(values: np.ndarray, index: np.ndarray) -> pd.Series:
        taken = _take(values.astype("int64"), index, 0)
        return pd.Series(pd.arrays.IntegerArray(taken, index < 0))

    frame = pd.DataFrame(
        {
            "position": np.arange(len(bi), dtype=np.int64),
            "program": pd.Series(np.where(bi >= 0, _take(base_programs, bi, None), _take(new_programs, ni, None)), dtype=object),
            "base_step": nullable(b["step"].to_numpy(), bi),
            "new_step": nullable(n["step"].to_numpy(), ni),
            "base_not_always_live_bytes": nullable(b["not_always_live_bytes"].to_numpy(), bi),
            "new_not_always_live_bytes": nullable(n["not_always_live_bytes"].to_numpy(), ni),
        }
    )
    frame.attrs["alignment"] = method
    return frame
