"""What a user most likely meant by a word that names nothing known (a job id, a source kind, a column,
a key of heartbeat.yml)."""

from __future__ import annotations

import difflib
from typing import Iterable

CLOSE = 0.75  # difflib's ratio from which a known word counts as the same word mistyped


def typos_of(word: str, known: Iterable[str], limit: int = 5, cutoff: float = CLOSE) -> list[str]:
    """The known words `word` is most likely a typo of (`kafak` -> `kafka`), closest first."""
    return difflib.get_close_matches(word, list(dict.fromkeys(known)), n=limit, cutoff=cutoff)


def close_to(word: str, known: Iterable[str], limit: int = 5) -> list[str]:
    """The known words that hold `word` (ignoring case: `orders` -> `daily_orders`), then those it is a
    typo of, at most `limit`, each once."""
    choices = list(dict.fromkeys(known))
    holding = [k for k in choices if word.lower() in k.lower()]
    return list(dict.fromkeys(holding + typos_of(word, choices, limit)))[:limit]


def did_you_mean(near: list[str]) -> str:
    """`did you mean A, B?` for the words `near`, else nothing."""
    return f"did you mean {', '.join(near)}?" if near else ""
