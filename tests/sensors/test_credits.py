"""NameLookupCreditsSensor and NameLookupCreditsTrigger against the emulator, in real DAG runs."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from airflow.providers.common.compat.sdk import AirflowException, AirflowSensorTimeout

from airflow_provider_namelookup.sensors import NameLookupCreditsSensor
from airflow_provider_namelookup.sensors.credits import MinCreditsInvalid, UnfixableWait
from airflow_provider_namelookup.triggers import NameLookupCreditsTrigger

pytestmark = pytest.mark.usefixtures("airflow_db")


@pytest.fixture
def later() -> Iterator[Any]:
    """``later(seconds, fn)``: run fn on a timer thread (e.g. top up credits mid-wait)."""
    timers: list[threading.Timer] = []

    def schedule(seconds: float, fn: Any) -> None:
        timers.append(threading.Timer(seconds, fn))
        timers[-1].start()

    yield schedule
    for timer in timers:
        timer.cancel()


def sensor(**kwargs: Any) -> str:
    args = {"task_id": "wait", "poke_interval": 0.2, "timeout": 5, **kwargs}
    return "NameLookupCreditsSensor(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


def test_met_at_once_pushes_the_statistic(write_dag: Any, namelookup: Any) -> None:
    dag = write_dag(sensor(min_credits=100))
    assert str(dag.run().state) == "success"
    assert dag.xcom("wait")["remaining_credits"] == 100


@pytest.mark.compat
@pytest.mark.parametrize("deferrable", [False, True])
def test_waits_until_credits_are_topped_up(write_dag: Any, namelookup: Any, later: Any, deferrable: bool) -> None:
    namelookup.set_credits(3)
    later(1.0, lambda: namelookup.set_credits(500))
    dag = write_dag(sensor(min_credits=400, deferrable=deferrable))
    assert str(dag.run().state) == "success"
    assert dag.xcom("wait")["remaining_credits"] == 500


@pytest.mark.parametrize("deferrable", [False, True])
def test_not_met_soft_fails_to_skipped(write_dag: Any, namelookup: Any, deferrable: bool) -> None:
    dag = write_dag(f"""
        wait = {sensor(min_credits=101, timeout=1, soft_fail=True, deferrable=deferrable)}

        @task
        def downstream():
            return "ran"

        wait >> downstream()
    """)
    dag.run()
    assert dag.state("wait") == "skipped" and dag.state("downstream") == "skipped"


@pytest.mark.parametrize("deferrable", [False, True])
def test_not_met_times_out(write_dag: Any, namelookup: Any, deferrable: bool) -> None:
    dag = write_dag(sensor(min_credits=101, timeout=1, deferrable=deferrable))
    assert str(dag.run().state) == "failed" and dag.state("wait") == "failed"


@pytest.mark.compat
def test_reschedule_mode(write_dag: Any, namelookup: Any, later: Any) -> None:
    namelookup.set_credits(0)
    later(1.0, lambda: namelookup.set_credits(50))
    dag = write_dag(sensor(min_credits=50, mode="reschedule", poke_interval=0.5, timeout=20))
    assert str(dag.run().state) == "success"
    assert dag.xcom("wait")["remaining_credits"] == 50


@pytest.mark.parametrize("deferrable", [False, True])
def test_auth_error_fails_at_once_even_with_soft_fail(write_dag: Any, namelookup: Any, emulator: Any,
                                                      deferrable: bool) -> None:
    import json
    import os

    os.environ["AIRFLOW_CONN_NL_BAD_TOKEN"] = json.dumps({"conn_type": "namelookup", "host": emulator.url,
                                                          "password": "wrong-token"})
    try:
        dag = write_dag(sensor(min_credits=1, timeout=30, soft_fail=True, deferrable=deferrable,
                               namelookup_conn_id="nl_bad_token"))
        assert str(dag.run().state) == "failed" and dag.state("wait") == "failed"
    finally:
        os.environ.pop("AIRFLOW_CONN_NL_BAD_TOKEN")


@pytest.mark.compat  # soft_fail's handling moved between Airflow 3.1 and 3.3
@pytest.mark.parametrize("mode", ["poke", "reschedule", "deferrable"])
def test_a_wrong_token_fails_the_first_try_without_retries_even_with_soft_fail(
        mode: str, write_dag: Any, namelookup: Any, emulator: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """Issue 36, item 2: with retries=2 the sensor went up_for_retry twice before failing (ten
    minutes late with a 5-minute retry_delay). A wrong token is a configuration error: no retry,
    no poke and no skip can fix it, so the first try fails, says what to change, and shows no token."""
    from tests.support import set_connection

    set_connection("nl_wrong_token", {"conn_type": "namelookup", "host": emulator.url,
                                      "password": "wrong-token-0123456789"})
    kwargs: dict[str, Any] = {"mode": "reschedule"} if mode == "reschedule" else {"deferrable": mode == "deferrable"}
    dag = write_dag(f"""
        from datetime import timedelta

        wait = {sensor(min_credits=1, timeout=30, soft_fail=True, namelookup_conn_id="nl_wrong_token", **kwargs)[:-1]},
                                       retries=2, retry_delay=timedelta(seconds=1))

        @task
        def downstream():
            return "ran"

        wait >> downstream()
    """)
    run = dag.run()
    ti = run.get_task_instance("wait")
    assert (str(ti.state), ti.try_number) == ("failed", 1)  # not up_for_retry, not skipped
    assert dag.state("downstream") == "upstream_failed"
    captured = capfd.readouterr()
    logged = captured.out + captured.err + caplog.text
    assert "invalid-auth-token" in logged and "no retry can fix this" in logged
    assert "the password of connection 'nl_wrong_token'" in logged  # what to change
    assert "trying again at the next poke" not in logged
    assert "wrong-token-0123456789" not in logged


def test_transient_errors_wait_for_the_next_poke(write_dag: Any, namelookup: Any, emulator: Any, later: Any) -> None:
    emulator.set_faults(error_503=1.0)
    later(1.0, emulator.set_faults)
    dag = write_dag(sensor(min_credits=10, timeout=20))
    assert str(dag.run().state) == "success"


def test_min_credits_from_an_upstream_xcom(write_dag: Any, namelookup: Any) -> None:
    dag = write_dag("""
        @task
        def plan():
            return {"credits_needed": 150}

        plan() >> NameLookupCreditsSensor(task_id="wait", poke_interval=0.2, timeout=1, soft_fail=True,
                                          min_credits="{{ ti.xcom_pull('plan')['credits_needed'] }}")
    """)
    dag.run()
    assert dag.state("wait") == "skipped"  # 150 > 100


# The trigger on its own -----------------------------------------------------------------------------

@pytest.mark.compat
def test_trigger_serialize_round_trips() -> None:
    trigger = NameLookupCreditsTrigger("nl", min_credits="25", poke_interval=3)  # type: ignore[arg-type]
    classpath, kwargs = trigger.serialize()
    assert classpath == "airflow_provider_namelookup.triggers.credits.NameLookupCreditsTrigger"
    assert kwargs == {"namelookup_conn_id": "nl", "min_credits": 25, "poke_interval": 3.0, "deadline": None}
    assert NameLookupCreditsTrigger(**kwargs).serialize() == (classpath, kwargs)


async def first_event(trigger: NameLookupCreditsTrigger) -> Any:
    async for event in trigger.run():
        return event.payload
    return None


@pytest.mark.compat
async def test_trigger_events(namelookup: Any, emulator: Any) -> None:
    met = await asyncio.wait_for(first_event(NameLookupCreditsTrigger("namelookup_default", 100, 0.1)), 10)
    assert met["status"] == "success" and met["statistic"]["remaining_credits"] == 100
    waiting = asyncio.ensure_future(first_event(NameLookupCreditsTrigger("namelookup_default", 300, 0.1)))
    await asyncio.sleep(0.5)
    assert not waiting.done()
    namelookup.set_credits(300)
    assert (await asyncio.wait_for(waiting, 10))["status"] == "success"
    timeout = await asyncio.wait_for(first_event(NameLookupCreditsTrigger(
        "namelookup_default", 10_000, 0.1, deadline=time.time() + 0.5)), 10)
    assert timeout["status"] == "timeout" and timeout["statistic"]["remaining_credits"] == 300


async def test_trigger_reports_auth_errors(emulator: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    monkeypatch.setenv("AIRFLOW_CONN_NL_WRONG", json.dumps({"conn_type": "namelookup", "host": emulator.url,
                                                            "password": "nope"}))
    event = await asyncio.wait_for(first_event(NameLookupCreditsTrigger("nl_wrong", 1, 0.1)), 10)
    assert event["status"] == "error" and event["status_id"] == "invalid-auth-token"
    assert event["message"].endswith("; fix the API token: the password of connection 'nl_wrong'")
    assert "nope" not in event["message"]


async def test_trigger_reports_a_connection_it_cannot_find_or_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 48, item 6: a ``namelookup_conn_id`` the triggerer does not know (its secrets backend is not
    the worker's, say) ends in an error event naming it, which fails the sensor at once; before, the
    trigger crashed with Airflow's own ``AirflowNotFoundException``. Extras out of their limits alike."""
    import json

    missing = await asyncio.wait_for(first_event(NameLookupCreditsTrigger("nl_nowhere", 1, 0.1)), 10)
    assert missing == {"status": "error", "status_id": "connection-not-found",
                       "message": "namelookup_conn_id 'nl_nowhere' is not defined: add a connection of type namelookup "
                                  "with that id (the API token in its password), or name one that exists"}
    monkeypatch.setenv("AIRFLOW_CONN_NL_ODD", json.dumps({"conn_type": "namelookup", "host": "http://127.0.0.1:1",
                                                          "password": "tok", "extra": {"max_retries": "many"}}))
    odd = await asyncio.wait_for(first_event(NameLookupCreditsTrigger("nl_odd", 1, 0.1)), 10)
    assert odd["status"] == "error" and odd["status_id"] == "connection-invalid"
    assert odd["message"].startswith("connection 'nl_odd': connection extra 'max_retries' must be an integer")
    op = NameLookupCreditsSensor(task_id="wait", min_credits=1)
    with pytest.raises(UnfixableWait, match=r"^namelookup_conn_id 'nl_nowhere' is not defined"):
        op.execute_complete({}, missing)


@pytest.mark.parametrize("value", ["lots", "", "-5", -5, 2.5, True, None, "1e3"])
def test_a_min_credits_that_can_never_be_a_number_fails_when_the_dag_is_parsed(value: Any) -> None:
    """Issue 48, item 6: it raised a ValueError at each poke, which Airflow retried."""
    with pytest.raises(MinCreditsInvalid, match=r"min_credits must be a whole number of credits \(0 or more\), got "):
        NameLookupCreditsSensor(task_id="wait", min_credits=value)


def test_a_min_credits_template_that_renders_to_no_number_fails_at_once(
        write_dag: Any, namelookup: Any, emulator: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """A template is read when the task runs: one that renders to no number fails the first try
    (``AirflowFailException``, retries unspent), naming the parameter, before any statistic call."""
    before = emulator.stats()["requests"]
    dag = write_dag(sensor(min_credits="{{ params.need }}", retries=2, retry_delay=0, params={"need": "lots"}))
    run = dag.run()
    assert dag.state("wait") == "failed" and int(run.get_task_instance("wait").try_number) == 1
    captured = capfd.readouterr()
    logged = captured.out + captured.err + caplog.text
    assert "min_credits must be a whole number of credits (0 or more), got 'lots'" in logged
    assert "no retry can fix this" in logged
    assert emulator.stats()["requests"] == before


@pytest.mark.compat
def test_execute_complete_accepts_only_known_events() -> None:
    op = NameLookupCreditsSensor(task_id="wait", min_credits=1)
    statistic = {"remaining_credits": 9}
    assert op.execute_complete({}, {"status": "success", "statistic": statistic}) == statistic
    with pytest.raises(UnfixableWait, match=r"^bad; fix the API token$"):  # resume_execution fails the task at once
        op.execute_complete({}, {"status": "error", "status_id": "invalid-auth-token",
                                 "message": "bad; fix the API token"})
    with pytest.raises(AirflowSensorTimeout, match="timed out"):
        op.execute_complete({}, {"status": "timeout", "statistic": None, "message": "too few"})
    for event in (None, {}, {"status": "success"}, {"status": "maybe"}, "success"):
        with pytest.raises(AirflowException, match="unexpected event"):
            op.execute_complete({}, event)  # type: ignore[arg-type]
