"""The event queue and the version clock shared by the event-driven protocols (docs/engines.md)."""

from __future__ import annotations

import bisect
import heapq

# Priorities on equal times (docs/papers/defedavg.md R23): an upload that closes a round is counted before a training
# that finishes at the same instant fills a send buffer, and both before the next round samples.
UPLOAD_ARRIVAL, TRAIN_DONE, ROUND_START = 0, 1, 2


class EventQueue:
    """Events ordered by (time, priority, client, seq); seq keeps equal keys in insertion order.

    Cancelling is lazy: a protocol pushes a replacement and ignores the stale event when it pops it
    (comparing the ``token`` it stored), which costs less than removing it from the heap.
    """

    __slots__ = ("_heap", "_seq")

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._seq = 0

    def push(self, time: float, priority: int, client: int, token: int = 0) -> None:
        heapq.heappush(self._heap, (time, priority, client, self._seq, token))
        self._seq += 1

    def pop(self) -> tuple[float, int, int, int]:
        """(time, priority, client, token) of the earliest event."""
        time, priority, client, _, token = heapq.heappop(self._heap)
        return time, priority, client, token

    def __len__(self) -> int:
        return len(self._heap)


class VersionClock:
    """Which global model a client holds at a time when downloads do not block (docs/papers/defedavg.md R11).

    Version v is broadcast at b_v (b_0 = 0) and lands in every receive buffer at b_v + T_down; a
    training that starts at s uses u(s) = max{v : b_v + T_down <= s}. Protocols ask only after the
    simulation has passed s (when the training is consumed), so every broadcast that can count is
    known, and a start that coincides with an arrival (T_down = 0) sees the newest version whatever
    the order in which the simultaneous events were processed.
    """

    __slots__ = ("_available", "_download")

    def __init__(self, download_time: float) -> None:
        self._download = download_time
        self._available = [download_time]  # b_0 + T_down

    def broadcast(self, time: float) -> None:
        self._available.append(time + self._download)

    def version_at(self, start: float) -> int:
        return bisect.bisect_right(self._available, start) - 1
