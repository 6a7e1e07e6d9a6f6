"""``pseudonymise=True`` end to end (issue 49, item 1): real DAG runs against the emulator, on real
PostgreSQL and SQLite; what the run wrote (every text column of every table it made), its log and its
XCom are scanned for the people's values."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.usefixtures("airflow_db")

EMAILS = [(1, "theresa.miller14@example.com"), (2, "Theresa.Miller14@Example.com "), (3, "john.smith@example.org"),
          (4, "anna-lena.schmidt@example.de"), (5, "no-mailbox-for-zoe"), (6, "giulia.rossi@example.it")]
"""Rows 1 and 2 are one question; row 5 is invalid (free, and its value must not be logged either)."""


def _people_values() -> set[str]:
    """Every e-mail, its local part, and the first and last names in it, as a scan looks for them."""
    found = set()
    for _, email in EMAILS:
        local = email.strip().split("@")[0]
        found |= {email.strip().lower(), local.lower()}
        found |= {part.lower() for part in re.split(r"[.\-_0-9]", local) if len(part) > 3}
    return found - {"example"}


def _held(texts: list[str]) -> list[tuple[str, str]]:
    values = _people_values()
    return [(value, text[max(0, text.lower().find(value) - 80):text.lower().find(value) + 40])
            for text in texts for value in values if value in text.lower()]


def _postgres_tables(warehouse: Any) -> set[str]:
    return {r[0] for r in warehouse.rows("SELECT table_name FROM information_schema.tables "
                                         "WHERE table_schema = 'public'")}


def _text_of_tables(warehouse: Any, tables: set[str]) -> list[str]:
    """Every value of every text column of ``tables`` (PostgreSQL)."""
    texts = []
    for table in sorted(tables):
        columns = [r[0] for r in warehouse.rows(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = 'public' AND table_name = %s "
            "AND data_type IN ('text', 'character varying', 'character')", (table,))]
        for column in columns:
            texts += [f"{table}.{column}={r[0]}" for r in warehouse.rows(f'SELECT "{column}" FROM "{table}"')
                      if r[0] is not None]
    return texts


def _logs(airflow_db: Path, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> list[str]:
    out = capfd.readouterr()
    return [out.out, out.err, caplog.text,
            *(p.read_text(errors="replace") for p in (airflow_db.parent / "logs").rglob("*") if p.is_file())]


@pytest.mark.database
def test_an_email_run_keeps_no_address_in_tables_logs_or_xcom_and_a_rerun_pays_nothing(
        postgres_warehouse: Any, write_dag: Any, namelookup: Any, airflow_db: Path,
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """The issue's first "what to reach": a DAG enriching e-mails with ``pseudonymise=True`` on
    PostgreSQL, by table and by XCom."""
    warehouse = postgres_warehouse
    before = _postgres_tables(warehouse)
    table = warehouse.create_customers([(k, e, None) for k, e in EMAILS])
    emails = [e for _, e in EMAILS]
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="gender", conn_id={warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", name_kind="email",
                                pseudonymise=True)
        SqlCountryOfOriginOperator(task_id="origin", conn_id={warehouse.conn_id!r}, source_table={table!r},
                                   key_column="customer_id", name_column="name", name_kind="email",
                                   pseudonymise=True)
        GenderLookupOperator(task_id="xcom", queries={emails!r}, name_kind="email", pseudonymise=True)
    """)
    capfd.readouterr()
    assert str(dag.run().state) == "success"
    spent = 100 - namelookup.remaining()
    assert spent == 4 + 2 * 4 + 4  # 4 distinct valid addresses: gender, origin (2 each), XCom (its own cache)

    base = table.split(".")[-1]  # tables other tests make meanwhile (in other processes) are not this run's
    made = {t for t in _postgres_tables(warehouse) - before if t.startswith(base) or t == warehouse.answers_table
            or t.startswith(("namelookup_map", "namelookup_resolved", "namelookup_incoming"))} - {base}
    assert made == {f"{table}_gender", f"{table}_origin", warehouse.answers_table}  # no staging table left
    texts = _text_of_tables(warehouse, made)
    assert len(texts) > 30  # the scan read the tables' values
    xcoms = [repr(dag.xcom(task)) for task in ("gender", "origin", "xcom")]
    logged = _logs(airflow_db, capfd, caplog)
    assert any("Invalid, costs nothing: 1 row (e.g. key 5)" in text for text in logged)  # the log was read
    assert _held(texts) == [] and _held(xcoms) == [] and _held(logged) == []

    gender = {r[0]: r[1:] for r in warehouse.rows(
        f"SELECT customer_id, gender, status, source_name, first_name, last_name, query_hash FROM {table}_gender")}
    assert [gender[k][0] for k in (1, 2, 3, 4, 6)] == ["female", "female", "male", "female", "female"]
    assert gender[1][5] == gender[2][5] != gender[3][5] and gender[5][1] == "error"
    assert all(re.fullmatch("[0-9a-f]{64}", gender[k][2]) for k in gender)  # source_name: a pseudonym
    assert re.fullmatch("[0-9a-f]{64}", gender[1][3]) and re.fullmatch("[0-9a-f]{64}", gender[1][4])
    from airflow_provider_namelookup.personal.pseudonym import pseudonym, pseudonymisation_key

    key = pseudonymisation_key("namelookup_pseudonymisation")
    assert gender[1][2] == pseudonym(key, EMAILS[0][1]) == gender[2][2]  # erasure finds a person by value
    assert gender[1][3] == pseudonym(key, "Theresa") and gender[1][4] == pseudonym(key, "Miller")
    answers = warehouse.rows(f"SELECT first_name, result_json FROM {warehouse.answers_table} "
                             f"WHERE result_json IS NOT NULL")
    assert len(answers) == 4 and all('"country_of_origin"' in r[1] and "map_url" not in r[1] for r in answers)
    out = dag.xcom("xcom")
    assert [r.get("gender") for r in out] == ["female", "female", "male", "female", None, "female"]
    assert out[0]["input"] == {"email": pseudonym(key, EMAILS[0][1])} and out[0]["input"] == out[1]["input"]

    assert str(dag.run().state) == "success"  # a rerun pays nothing, the XCom task included (its answers are
    assert 100 - namelookup.remaining() == spent + 4  # ...its try's own: it pays again, the tables do not)
    assert (dag.xcom("gender")["credits_used"], dag.xcom("origin")["credits_used"]) == (0, 0)
    again = {r[0]: r[1:] for r in warehouse.rows(
        f"SELECT customer_id, gender, status, source_name, first_name, last_name, query_hash FROM {table}_gender")}
    assert again == gender


def test_a_missing_key_fails_at_once_naming_the_connection(
        sqlite_warehouse: Any, write_dag: Any, namelookup: Any, monkeypatch: pytest.MonkeyPatch, airflow_db: Path,
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """A pseudonymising run (here by default: e-mails, full names) without its key fails before anything
    is read, made or paid, saying how to make the key."""
    monkeypatch.delenv("AIRFLOW_CONN_NAMELOOKUP_PSEUDONYMISATION")
    monkeypatch.setenv("AIRFLOW_CONN_NO_KEY", '{"conn_type": "generic"}')
    table = sqlite_warehouse.create_customers([(1, "anna@example.com", None)])
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="table", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", name_kind="email", retries=3)
        GenderLookupOperator(task_id="xcom", queries=["Anna Smith"], name_kind="full_name", retries=3,
                             pseudonymisation_conn_id="no_key")
    """)
    assert str(dag.run().state) == "failed"
    assert dag.state("table") == dag.state("xcom") == "failed"  # not up_for_retry: no retry makes a key
    assert f"{table}_gender" not in sqlite_warehouse.table_names()
    logged = "\n".join(_logs(airflow_db, capfd, caplog))
    assert "pseudonymisation_conn_id 'namelookup_pseudonymisation': no such connection" in logged
    assert "airflow connections add namelookup_pseudonymisation --conn-type generic" in logged
    assert "pseudonymisation_conn_id 'no_key' holds no key: set its password to a long random secret" in logged
    assert namelookup.remaining() == 100


def test_off_keeps_values_in_clear_as_before(sqlite_warehouse: Any, write_dag: Any, namelookup: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """``pseudonymise=False`` needs no key, and writes what earlier releases wrote."""
    monkeypatch.delenv("AIRFLOW_CONN_NAMELOOKUP_PSEUDONYMISATION")
    table = sqlite_warehouse.create_customers([(1, "theresa.miller14@example.com", None)])
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="table", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", name_kind="email", pseudonymise=False)
        GenderLookupOperator(task_id="xcom", queries=["Anna Smith"], name_kind="full_name", pseudonymise=False)
    """)
    assert str(dag.run().state) == "success"
    assert sqlite_warehouse.rows(f"SELECT source_name, first_name, last_name FROM {table}_gender") == [
        ("theresa.miller14@example.com", "Theresa", "Miller")]
    from airflow_provider_namelookup.models import Query

    assert sqlite_warehouse.rows(f"SELECT query_hash FROM {sqlite_warehouse.answers_table}") == [
        (Query("email", "theresa.miller14@example.com").identity("gender"),)]
    assert dag.xcom("xcom")[0]["input"] == {"full_name": "Anna Smith"}
    assert os.environ.get("AIRFLOW_CONN_NAMELOOKUP_PSEUDONYMISATION") is None


def test_shards_share_a_pseudonymised_cache_and_max_age_asks_again(sqlite_warehouse: Any, write_dag: Any,
                                                                   namelookup: Any) -> None:
    """Mapped ``where`` shards of a pseudonymised run pay each distinct question once between them; an
    answer older than ``max_age`` is paid again, as in a clear run; a changed address is looked up again."""
    emails = ["anna@example.com", "ANNA@example.com", "carla@example.com", "dora@example.com", "emil@example.com",
              "fritz@example.com"]
    table = sqlite_warehouse.create_customers([(i, e, None) for i, e in enumerate(emails, start=1)])
    dag = write_dag(f"""
        SqlGenderLookupOperator.partial(
            task_id="enrich", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r}, key_column="customer_id",
            name_column="name", name_kind="email", target_table="{table}_out", max_age=3600,
        ).expand(where=["customer_id % 2 = 0", "customer_id % 2 = 1"])
    """)
    assert str(dag.run().state) == "success"
    assert namelookup.remaining() == 100 - 5  # anna once across both shards
    assert str(dag.run().state) == "success" and namelookup.remaining() == 95
    sqlite_warehouse.hook.run(f"UPDATE {sqlite_warehouse.answers_table} SET answered_at = answered_at - 7200 "
                              f"WHERE query_hash IN (SELECT query_hash FROM {table}_out WHERE customer_id = 3)")
    sqlite_warehouse.set_name(table, 4, "dora.new@example.com")
    assert str(dag.run().state) == "success"
    assert namelookup.remaining() == 95 - 2  # carla's stale answer, dora's new address
    rows = sqlite_warehouse.rows(f"SELECT source_name, gender FROM {table}_out ORDER BY customer_id")
    assert all(re.fullmatch("[0-9a-f]{64}", r[0]) for r in rows) and rows[0] == rows[1]


@pytest.mark.database
def test_a_pseudonymised_run_on_every_warehouse(warehouse: Any, write_dag: Any, namelookup: Any) -> None:
    """The target's raw name columns hold pseudonyms, typed as such, on each engine (created at the fill
    or before it), and a rerun over them pays nothing and rewrites nothing."""
    table = warehouse.create_customers([(k, e, None) for k, e in EMAILS])
    dag = write_dag(f"""
        SqlGenderLookupOperator(task_id="gender", conn_id={warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", name_kind="email")
    """)
    assert str(dag.run().state) == "success" and namelookup.remaining() == 100 - 4
    rows = {r[0]: r[1:] for r in warehouse.rows(
        f"SELECT customer_id, gender, source_name, first_name, enriched_at FROM {table}_gender")}
    assert [rows[k][0] for k in (1, 2, 3, 4, 6)] == ["female", "female", "male", "female", "female"]
    assert all(re.fullmatch("[0-9a-f]{64}", rows[k][1]) for k in rows) and rows[1][1] == rows[2][1]
    assert all(rows[k][2] is None or re.fullmatch("[0-9a-f]{64}", rows[k][2]) for k in rows)
    assert str(dag.run().state) == "success" and namelookup.remaining() == 96
    again = {r[0]: r[1:] for r in warehouse.rows(
        f"SELECT customer_id, gender, source_name, first_name, enriched_at FROM {table}_gender")}
    assert again == rows  # nothing rewritten: enriched_at as it was
