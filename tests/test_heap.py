"""The task's older objects set aside from the garbage collector, and given back once."""

from __future__ import annotations

import gc

import pytest

from airflow_provider_namelookup.heap import YOUNG_THRESHOLD, leaves_older_objects_alone, older_objects_left_alone


def test_the_outermost_block_gives_the_objects_back_and_an_inner_one_does_not() -> None:
    gc.unfreeze()
    with older_objects_left_alone():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with older_objects_left_alone():
            pass
        assert gc.get_freeze_count() > 0  # the inner block ended; the outer freeze holds (objects may be freed)
    assert gc.get_freeze_count() == 0


def test_an_execute_decorated_runs_with_the_objects_set_aside_also_when_it_raises() -> None:
    seen: list[int] = []

    @leaves_older_objects_alone
    def execute(fail: bool) -> None:
        seen.append(gc.get_freeze_count())
        if fail:
            raise ValueError("boom")

    execute(False)
    with pytest.raises(ValueError, match="boom"):
        execute(True)
    assert len(seen) == 2 and min(seen) > 0 and gc.get_freeze_count() == 0


def test_the_young_generation_is_collected_less_often_inside_and_as_before_after() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with older_objects_left_alone():
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
            with older_objects_left_alone():
                assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
            assert gc.get_threshold() == (YOUNG_THRESHOLD, 10, 10)
        assert gc.get_threshold() == (700, 10, 10)
        gc.set_threshold(0, 10, 10)  # collection turned off by the process: left off
        with older_objects_left_alone():
            assert gc.get_threshold() == (0, 10, 10)
        gc.set_threshold(100_000, 10, 10)  # a larger threshold chosen by the process: kept
        with older_objects_left_alone():
            assert gc.get_threshold() == (100_000, 10, 10)
    finally:
        gc.set_threshold(*before)


def test_cycles_made_inside_are_still_collected() -> None:
    import weakref

    class Node:
        pass

    with older_objects_left_alone():
        node = Node()
        node.self = node  # type: ignore[attr-defined]
        gone = weakref.ref(node)
        del node
        kept = [[] for _ in range(YOUNG_THRESHOLD * 2)]  # enough new containers for a pass of the young generation
        assert gone() is None
        del kept
