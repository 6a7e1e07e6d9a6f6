"""The objects a task process made before a lookup starts, set aside from the garbage collector.

An Airflow task process holds hundreds of thousands of objects before the operator runs (Airflow's
own, the DAG's). Every full pass of the garbage collector walks them all again, and a task that
imports a module (a warehouse's driver: psycopg builds some 600 classes) or plans tens of
thousands of values triggers many passes. Measured inside a task, importing psycopg took 0.37 s
with those objects in view and 0.12 s with them set aside; planning a 20,000-row table spent a
third of its time in such passes. ``gc.freeze`` sets them aside; they are given back (to the
oldest generation, so nothing is lost) when the outermost user ends.

For the same block the youngest generation is collected after :data:`YOUNG_THRESHOLD` new
container objects instead of Python's 700: a run makes tens of thousands of long-lived objects
(its questions, their queries, the answers on their way to the warehouse), and each hundredth
pass of the young generations walks them again once they outnumber a quarter of the old ones
(a 1M-row first run: 7 full passes, 0.19 s of CPU; 0.30 s in all passes). Only garbage held in
reference cycles waits for a pass; everything else is freed when its last reference goes, as
always, and the cycles are still collected, in passes 70 times rarer (at most ~50,000 new
objects apart, a few MB).

Example::

    with older_objects_left_alone():
        import psycopg  # noqa: F401  (the collector's passes skip what existed before)

    @leaves_older_objects_alone
    def execute(self, context): ...
"""

from __future__ import annotations

import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

YOUNG_THRESHOLD = 50_000
"""New container objects between two collections of the youngest generation inside the block."""

_depth = 0
_lock = threading.Lock()
_thresholds: tuple[int, int, int] | None = None


@contextmanager
def older_objects_left_alone() -> Iterator[None]:
    """Freeze the objects that exist now for the block; nested uses keep the outermost freeze
    (an inner ``gc.unfreeze`` would give back the outer block's objects too early)."""
    global _depth, _thresholds
    with _lock:
        _depth += 1
        if _depth == 1:
            gc.freeze()
            _thresholds = gc.get_threshold()
            if 0 < _thresholds[0] < YOUNG_THRESHOLD:  # 0: collection is off; a larger one was chosen
                gc.set_threshold(YOUNG_THRESHOLD, *_thresholds[1:])
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()
                if _thresholds is not None:
                    gc.set_threshold(*_thresholds)
                    _thresholds = None


def leaves_older_objects_alone(function: F) -> F:
    """Decorate ``function`` (an operator's ``execute``) to run inside :func:`older_objects_left_alone`."""

    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with older_objects_left_alone():
            return function(*args, **kwargs)

    return wrapped  # type: ignore[return-value]
