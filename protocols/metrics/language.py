"""Perplexity of a language model from the log-probabilities of the observed tokens.

Definition: seed 003 (``seeds/003_7b2efcab91cdd443.txt``), "Perplexity (PPL)" §2: ``PPL(W) =
P(w_1 … w_N)^(-1/N)``, computed as ``exp(H)`` with the mean negative log-likelihood
``H = -(1/N) Σ log P(w_i | w_<i)`` — or ``2^H`` when the logarithms are in base 2 (bits). A perfect
model has PPL 1 and a uniform model over ``V`` tokens has PPL ``V`` (seed 003 §3).
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt

from streambench.protocols.metrics.checks import FloatArray

Base = Literal["e", 2, 10]


def perplexity(
    logprobs: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    base: Base = "e",
    average: Literal["micro", "macro"] = "micro",
) -> float:
    """Perplexity from per-token log-probabilities ``logprobs`` ``[N]`` or ``[B, T]`` — seed 003, PPL.

    - ``logprobs``: ``log P(w_i | w_<i)`` of the observed tokens, in base ``base`` (``"e"``: natural
      log, as returned by ``log_softmax``; ``2``: bits; ``10``). Every counted value must be ``≤ 0``
      and not NaN; ``-inf`` (a token given probability 0) makes the perplexity ``inf``.
    - ``mask``: bool or 0/1, same shape; ``True`` marks the tokens to count (e.g. not padding). Values
      under a ``False`` mask are ignored (they may be anything, NaN included). At least one token must
      be counted.
    - ``average="micro"`` (default, the seed's formula): ``base ** (Σ NLL / number of tokens)`` over all
      counted tokens of all sequences, i.e. every token weighs the same (corpus perplexity).
      ``"macro"``: the mean over the ``B`` sequences of each sequence's perplexity (for ``[N]`` input,
      one sequence: the same as micro); every sequence must have at least one counted token.
    """
    lp = np.asarray(logprobs)
    if lp.ndim not in (1, 2):
        raise ValueError(f"logprobs must be [N] or [B, T], got shape {lp.shape}")
    if not (np.issubdtype(lp.dtype, np.floating) or np.issubdtype(lp.dtype, np.integer)):
        raise ValueError(f"logprobs must be real numbers, got dtype {lp.dtype}")
    if base not in ("e", 2, 10) or isinstance(base, bool):
        raise ValueError(f"base must be 'e', 2 or 10, got {base!r}")
    if average not in ("micro", "macro"):
        raise ValueError(f"average must be 'micro' or 'macro', got {average!r}")
    lp = lp.astype(np.float64)
    if mask is None:
        m = np.ones(lp.shape, dtype=np.bool_)
    else:
        m = np.asarray(mask)
        if m.shape != lp.shape:
            raise ValueError(f"mask has shape {m.shape}, expected the shape of logprobs {lp.shape}")
        if m.dtype != np.bool_:
            if not (np.issubdtype(m.dtype, np.integer) or np.issubdtype(m.dtype, np.floating)):
                raise ValueError(f"mask must be bool or 0/1, got dtype {m.dtype}")
            if not np.all((m == 0) | (m == 1)):
                raise ValueError("mask must contain only 0/1 values")
            m = m.astype(np.bool_)
    if not m.any():
        raise ValueError("mask selects no token: perplexity of zero tokens is undefined")
    counted = lp[m]
    if np.isnan(counted).any():
        raise ValueError("logprobs contains NaN at counted tokens")
    if (counted > 0).any():
        raise ValueError("logprobs must be <= 0 (log-probabilities); got a positive value at a counted token")
    nll: FloatArray = -np.where(m, lp, 0.0)  # masked values (maybe NaN) never enter the sums
    if average == "micro":
        return float(_power(np.asarray(nll.sum() / m.sum()), base))
    rows, n_tok = np.atleast_2d(nll), np.atleast_2d(m).sum(axis=1)
    if np.any(n_tok == 0):
        raise ValueError(f"mask selects no token in sequence {int(np.flatnonzero(n_tok == 0)[0])} (macro)")
    return float(_power(rows.sum(axis=1) / n_tok, base).mean())


def _power(h: FloatArray, base: Base) -> FloatArray:
    """``base ** h`` with the exact exponential of each base (``exp``, ``exp2``); overflow gives inf."""
    with np.errstate(over="ignore"):
        if base == "e":
            return np.exp(h)
        return np.exp2(h) if base == 2 else np.power(10.0, h)
