"""Noise for a sequence of rounds, drawn a chunk of rounds at a time.

An agent that needs fresh noise every round pays numpy's per-call overhead every round unless
it draws many rounds at once. :class:`ChunkedDraws` draws ``chunk`` rounds with one call of a
user function and hands them out one round at a time. The user function must consume its
generators *sequentially* (drawing rounds ``a..b-1`` then ``b..c-1`` gives the same numbers as
drawing ``a..c-1`` at once), so results never depend on the chunk size; a function that
needs several laws keeps one generator per law (e.g. ``rng.spawn(2)``), since interleaving two
laws on one generator makes the stream depend on where the chunks end.

With ``prefetch=True`` the next chunk is drawn by the background thread of
:mod:`dpbandits._background` while the current one is used. The draws still happen one after
the other in the same order, so the numbers are the same with or without it, provided the
stream's generators are its own (spawned for it, used by nothing else).
``DPBANDITS_PREFETCH=0`` turns prefetching off. A stream pickles mid-run (a pending chunk is
waited for and stored).
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

import numpy as np

from dpbandits._background import PicklesPending, executor, prefetch_enabled
from dpbandits._validation import check_int

__all__ = ["ChunkedDraws", "chunk_rounds"]

#: floats one chunk may hold (16 MiB; a quarter of it when prefetching, which holds two)
CHUNK_BUDGET = 2**21
#: most rounds in one chunk
MAX_CHUNK = 256


def chunk_rounds(floats_per_round: int, n_rounds: int, budget: int | None = None,
                 max_chunk: int | None = None) -> int:
    """Rounds per chunk: as many as fit in ``budget`` floats (default :data:`CHUNK_BUDGET`),
    between 1 and ``max_chunk`` (default :data:`MAX_CHUNK`) and at most ``n_rounds``."""
    budget = CHUNK_BUDGET if budget is None else budget
    max_chunk = MAX_CHUNK if max_chunk is None else max_chunk
    return int(max(1, min(max_chunk, budget // max(1, floats_per_round), n_rounds)))


class ChunkedDraws(PicklesPending):
    """Hand out the variates of rounds ``0 .. n_rounds - 1``, one round per :meth:`next`.

    ``draw(start, n)`` returns a tuple of arrays whose first axis holds rounds
    ``start .. start + n - 1`` (it is called with ``n <= chunk``, never past ``n_rounds``;
    it must be picklable for the stream to pickle). ``floats_per_round`` sizes the chunk
    (:func:`chunk_rounds`) unless ``chunk`` is given. ``prefetch``: draw the next chunk in a
    background thread (only when there is more than one chunk).
    """

    def __init__(self, draw: Callable[[int, int], tuple], n_rounds: int,
                 floats_per_round: int, chunk: int | None = None, prefetch: bool = False):
        self._draw = draw
        self.n_rounds = check_int("n_rounds", n_rounds, low=0)
        prefetch = bool(prefetch) and prefetch_enabled()
        budget = CHUNK_BUDGET // 4 if prefetch else CHUNK_BUDGET
        self.chunk = (chunk_rounds(floats_per_round, self.n_rounds, budget) if chunk is None
                      else check_int("chunk", chunk, low=1))
        self.prefetch = prefetch and self.n_rounds > self.chunk
        self._start = 0  # first round of the current chunk
        self._pos = 0  # next round to hand out
        self._buf: tuple = ()
        self._pending: Future | None = None
        if self.prefetch:
            self._pending = executor().submit(self._draw_chunk, 0)

    def _draw_chunk(self, start: int) -> tuple:
        return tuple(self._draw(start, min(self.chunk, self.n_rounds - start)))

    @property
    def position(self) -> int:
        """Rounds handed out so far."""
        return self._pos

    def next(self) -> tuple[np.ndarray, ...]:
        """The variates of the next round (views into the current chunk)."""
        if self._pos >= self.n_rounds:
            raise IndexError(f"all {self.n_rounds} rounds of this stream were drawn")
        i = self._pos - self._start
        if not self._buf or i >= len(self._buf[0]):
            if self._pending is not None:
                self._buf = self._pending.result()
                after = self._pos + len(self._buf[0])
                self._pending = (executor().submit(self._draw_chunk, after)
                              if after < self.n_rounds else None)
            else:
                self._buf = self._draw_chunk(self._pos)
            self._start, i = self._pos, 0
        self._pos += 1
        buf = self._buf
        return (buf[0][i],) if len(buf) == 1 else tuple([a[i] for a in buf])
