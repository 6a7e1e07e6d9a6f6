"""The usage record's format and rules, the Variable keys, and the view's numbers from records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from airflow_provider_namelookup.usage.record import UsageRecord
from airflow_provider_namelookup.usage.report import ConnectionState, usage_report
from airflow_provider_namelookup.usage.store import KEY_PREFIX, key_floor, key_of, record_key

NOW = datetime(2026, 11, 23, 12, tzinfo=UTC)
EVERYTHING: dict[str, Any] = {"readable_dags": None, "readable_connections": None}
"""A user who may read every DAG and every connection."""


def record(**changes: Any) -> UsageRecord:
    fields: dict[str, Any] = dict(dag_id="enrich", task_id="genders", run_id="manual__1", map_index=-1, try_number=1,
                                  ti_id="0199a3c2-7c1e-7d55-9a57-6a3f1f0c2b11", conn_id="nl", lookup="gender",
                                  state="success", credits_used=10, requests=1,
                                  retries=0, cache_hits=0, lookups=10, remaining_credits=90,
                                  start=NOW - timedelta(hours=1), end=NOW - timedelta(hours=1) + timedelta(seconds=2))
    fields.update(changes)
    return UsageRecord(**fields)


@pytest.mark.parametrize(("change", "message"), [
    ({"dag_id": ""}, "dag_id must be a non-empty string"),
    ({"lookup": "ethnicity"}, "lookup must be one of gender, country_of_origin, statistic, got 'ethnicity'"),
    ({"state": "running"}, "state must be one of success, failed, killed"),
    ({"credits_used": -1}, "credits_used must be a whole number of at least 0, got -1"),
    ({"requests": True}, "requests must be a whole number of at least 0, got True"),
    ({"map_index": -2}, "map_index must be -1 or a whole number of at least 0, got -2"),
    ({"remaining_credits": 1.5}, "remaining_credits must be a whole number of at least 0, got 1.5"),
    ({"start": "yesterday"}, "start must be an ISO 8601 date and time, got 'yesterday'"),
    ({"end": 5}, "end must be an ISO 8601 date and time, got 5"),
])
def test_a_bad_record_is_refused_naming_the_field_and_the_rule(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        record(**change)


def test_a_record_survives_its_json_form_and_refuses_other_versions() -> None:
    original = record(error="NameLookupLimitExceeded", status_id="limit-exceeded", state="failed", cache_hits=None)
    assert UsageRecord.from_dict(original.as_dict()) == original
    with pytest.raises(ValueError, match="v must be 2"):
        UsageRecord.from_dict({**original.as_dict(), "v": 1})  # format 1 had no ti_id: nothing ties it to a try
    with pytest.raises(ValueError, match="a usage record needs credits_used, requests"):
        UsageRecord.from_dict({k: v for k, v in original.as_dict().items() if k not in ("credits_used", "requests")})
    naive = record(start=datetime(2026, 11, 23, 8), end=datetime(2026, 11, 23, 9))
    assert naive.start.tzinfo is UTC
    lossy = record(credits_maybe_charged=40)
    assert UsageRecord.from_dict(lossy.as_dict()).credits_maybe_charged == 40
    older = {k: v for k, v in lossy.as_dict().items() if k != "credits_maybe_charged"}  # written before it was counted
    assert UsageRecord.from_dict(older).credits_maybe_charged == 0


def test_keys_sort_by_start_fit_airflow_and_do_not_collide_when_ids_are_cut() -> None:
    long_dag, long_task = "d" * 250, "t" * 250
    a = record_key(long_dag, long_task, "run_a", -1, 1, "u", NOW)
    b = record_key(long_dag, long_task, "run_b", -1, 1, "u", NOW)
    assert a != b and len(a) <= 250 and a.startswith(KEY_PREFIX)
    earlier = key_of(record(start=NOW - timedelta(days=2)))
    later = key_of(record(start=NOW - timedelta(microseconds=1)))
    assert earlier < key_floor(NOW - timedelta(days=1)) < later < key_floor(NOW)


def test_the_report_adds_up_per_day_dag_and_task_and_counts_tries_not_executions() -> None:
    records = [
        record(start=NOW - timedelta(days=1, hours=3), credits_used=30, requests=2, run_id="manual__0"),
        record(start=NOW - timedelta(hours=2), credits_used=5, requests=1, try_number=1, state="failed"),
        record(start=NOW - timedelta(hours=1), credits_used=7, requests=1, try_number=2),
        record(task_id="origins", lookup="country_of_origin", start=NOW - timedelta(hours=1), credits_used=40,
               requests=20),
        record(dag_id="other", start=NOW - timedelta(hours=1), credits_used=3),
        record(task_id="wait", lookup="statistic", credits_used=0, requests=4, start=NOW - timedelta(minutes=5)),
        record(task_id="wait", lookup="statistic", credits_used=0, requests=1, start=NOW - timedelta(minutes=1)),
        record(start=NOW - timedelta(days=40), credits_used=1000),  # outside the period
    ]
    report = usage_report(records, [], days=30, now=NOW, **EVERYTHING)
    assert report["daily"] == [
        {"date": "2026-11-22", "dag_id": "enrich", "credits_used": 30},
        {"date": "2026-11-23", "dag_id": "enrich", "credits_used": 52},
        {"date": "2026-11-23", "dag_id": "other", "credits_used": 3},
    ]
    assert report["tasks"] == [
        {"dag_id": "enrich", "task_id": "genders", "credits_used": 42, "requests": 4, "tries": 3},
        {"dag_id": "enrich", "task_id": "origins", "credits_used": 40, "requests": 20, "tries": 1},
        {"dag_id": "other", "task_id": "genders", "credits_used": 3, "requests": 1, "tries": 1},
        {"dag_id": "enrich", "task_id": "wait", "credits_used": 0, "requests": 5, "tries": 1},
    ]
    # the latest tries: the sensor's two pokes are one try; the failed and the successful try of genders two
    assert (report["tries"][0]["task_id"], report["tries"][0]["requests"]) == ("wait", 5)
    genders = sorted((t["try_number"], t["state"], t["credits_used"]) for t in report["tries"]
                     if t["dag_id"] == "enrich" and t["task_id"] == "genders" and t["run_id"] == "manual__1")
    assert genders == [(1, "failed", 5), (2, "success", 7)]
    assert "v" not in report["tries"][0]


def test_a_user_sees_only_the_dags_they_may_read_but_the_burn_rate_is_the_accounts() -> None:
    records = [record(dag_id="mine", credits_used=70), record(dag_id="theirs", credits_used=140)]
    accounts = [ConnectionState("nl", remaining_credits=2100, is_limit_reached=False, account="acct")]
    report = usage_report(records, accounts, days=30, now=NOW, readable_dags={"mine"}, readable_connections=None)
    assert {d["dag_id"] for d in report["daily"]} == {"mine"}
    assert {t["dag_id"] for t in report["tasks"]} == {"mine"}
    assert {t["dag_id"] for t in report["tries"]} == {"mine"}
    # 210 credits spent on the account within its first day of records: 210 a day, 10 days left
    assert report["forecast"] == {"burn_per_day": 210.0, "days_left": 10.0, "remaining_credits": 2100,
                                  "window_days": 1.0}
    assert report["connections"][0]["days_left"] == 10.0


def test_the_burn_rate_spans_the_last_seven_days_once_records_are_older() -> None:
    records = [record(start=NOW - timedelta(days=d), credits_used=10) for d in range(1, 20)]
    accounts = [ConnectionState("nl", remaining_credits=700, account="a")]
    forecast = usage_report(records, accounts, days=30, now=NOW, **EVERYTHING)["forecast"]
    assert forecast == {"burn_per_day": 10.0, "days_left": 70.0, "remaining_credits": 700, "window_days": 7.0}


def test_connections_of_one_account_are_counted_once_and_unknown_remaining_gives_no_forecast() -> None:
    records = [record(conn_id="a1", credits_used=50), record(conn_id="a2", credits_used=50)]
    same = [ConnectionState("a1", remaining_credits=1000, account="x"), ConnectionState("a2", remaining_credits=1000,
                                                                                       account="x")]
    forecast = usage_report(records, same, days=30, now=NOW, **EVERYTHING)["forecast"]
    assert forecast["remaining_credits"] == 1000 and forecast["burn_per_day"] == 100.0 and forecast["days_left"] == 10
    down = [ConnectionState("a1", error="unreachable: no answer", account="a1")]
    report = usage_report(records, down, days=30, now=NOW, **EVERYTHING)
    assert report["forecast"]["days_left"] is None and report["forecast"]["remaining_credits"] is None
    assert report["connections"][0]["error"] == "unreachable: no answer"
    assert report["connections"][0]["burn_per_day"] == 50.0


def test_no_spending_means_no_forecast() -> None:
    accounts = [ConnectionState("nl", remaining_credits=500, account="a")]
    forecast = usage_report([record(credits_used=0)], accounts, days=30, now=NOW, **EVERYTHING)["forecast"]
    assert forecast["days_left"] is None and forecast["remaining_credits"] == 500
