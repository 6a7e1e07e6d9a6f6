"""Mistakes no retry can fix fail the task at once, without Airflow's retries (issue 25, item 7):
https spoken to a plain-HTTP port, a misspelled service or warehouse ``conn_id``. Before, the
first was retried six times by the hook and then by Airflow; the second raised Airflow's
AirflowNotFoundException, which Airflow retries (with retries=2 and a 5-minute delay, about
10 minutes to fail). Each DAG here has retries=2 (a 1 s delay keeps the old behaviour short)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support import warehouses

pytestmark = pytest.mark.usefixtures("airflow_db")

RETRIES = 'retries=2, retry_delay=__import__("datetime").timedelta(seconds=1)'


@pytest.fixture
def plain_http_port() -> Iterator[int]:
    """A real plain-HTTP server on loopback (the standard library's)."""

    class Quiet(http.server.BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def _logged(capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> str:
    captured = capfd.readouterr()
    return captured.out + captured.err + caplog.text


def _tries(run: Any, task_id: str) -> int:
    return int(run.get_task_instance(task_id).try_number)


def test_https_to_a_plain_http_port_fails_the_task_at_once(plain_http_port: int, write_dag: Any,
                                                           sqlite_warehouse: Any, capfd: pytest.CaptureFixture[str],
                                                           caplog: pytest.LogCaptureFixture) -> None:
    from tests.support import set_connection

    set_connection("namelookup_tls_mistake", {"conn_type": "namelookup", "host": f"https://127.0.0.1:{plain_http_port}",
                                              "password": "tok-never-sent-0123456789"})
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    dag = write_dag(f"""
        GenderLookupOperator(task_id="xcom", queries=["Anna"], namelookup_conn_id="namelookup_tls_mistake", {RETRIES})
        SqlGenderLookupOperator(task_id="table", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name",
                                namelookup_conn_id="namelookup_tls_mistake", {RETRIES})
        NameLookupCreditsSensor(task_id="sensor", namelookup_conn_id="namelookup_tls_mistake", poke_interval=0.1,
                                timeout=30)
    """)
    run = dag.run()
    assert [dag.state(t) for t in ("xcom", "table", "sensor")] == ["failed"] * 3
    assert [_tries(run, t) for t in ("xcom", "table")] == [1, 1]  # not up_for_retry
    logged = _logged(capfd, caplog)
    assert f"127.0.0.1:{plain_http_port} answered in plain HTTP, not https" in logged
    assert "no retry can fix this" in logged
    assert "Retrying in" not in logged  # the hook sent one handshake per task
    assert "trying again at the next poke" not in logged  # the sensor did not wait for its timeout


@pytest.mark.parametrize(("operator", "conn_id"), [
    ("GenderLookupOperator(task_id='lookup', queries=['Anna'], namelookup_conn_id='namelookup_defualt', {retries})",
     "namelookup_defualt"),
    ("SqlGenderLookupOperator(task_id='lookup', conn_id='warehouse_sqlit', source_table='customers', "
     "key_column='customer_id', name_column='name', {retries})", "warehouse_sqlit"),
    ("SqlGenderLookupOperator(task_id='lookup', conn_id={warehouse!r}, source_table={table!r}, "
     "key_column='customer_id', name_column='name', namelookup_conn_id='namelookup_defualt', {retries})",
     "namelookup_defualt"),
])
def test_a_misspelled_conn_id_fails_the_task_at_once_naming_it(operator: str, conn_id: str, write_dag: Any,
                                                               namelookup: Any, sqlite_warehouse: Any,
                                                               capfd: pytest.CaptureFixture[str],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    dag = write_dag(operator.format(retries=RETRIES, warehouse=sqlite_warehouse.conn_id, table=table))
    run = dag.run()
    assert dag.state("lookup") == "failed" and _tries(run, "lookup") == 1
    logged = _logged(capfd, caplog)
    assert f"The conn_id `{conn_id}` isn't defined (no retry can fix this" in logged
    assert namelookup.remaining() == 100


# A wrong token, before any table is made (issue 36, item 3) ------------------------------------------------

house = warehouses("sqlite", "postgres")


def test_a_wrong_token_fails_a_table_task_at_once_before_any_table_is_made(
        house: Any, write_dag: Any, namelookup: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """Before, nothing was spent but the target had been created already, holding the invalid rows,
    and the log read ``...is invalid.. The 0 answers this run paid for are stored...``."""
    from tests.support import set_connection

    set_connection("namelookup_bad_token", {"conn_type": "namelookup", "host": namelookup.url,
                                            "password": "wrong-token-0123456789"})
    table = house.create_customers([(1, "Anna", None), (2, "", None), (3, "x" * 60, None), (4, "Ben", None)])
    enrich = (f"SqlGenderLookupOperator(task_id='enrich', conn_id={house.conn_id!r}, source_table={table!r}, "
              f"key_column='customer_id', name_column='name', {{token}}{RETRIES})")
    dag = write_dag(enrich.format(token="namelookup_conn_id='namelookup_bad_token', "))
    run = dag.run()
    assert dag.state("enrich") == "failed" and _tries(run, "enrich") == 1
    assert not house.has_table(f"{table}_gender") and not house.has_table(house.answers_table)
    logged = _logged(capfd, caplog)
    assert ("invalid-auth-token (HTTP 400) from connection 'namelookup_bad_token': The bearer token is invalid; "
            "fix the API token: the password of connection 'namelookup_bad_token' (no retry can fix this") in logged
    assert ".." not in logged.replace("...", "") and "0 answers this run paid for" not in logged
    assert "wrong-token-0123456789" not in logged
    assert namelookup.remaining() == 100

    # With the token fixed the run pays for its two valid names; a rerun that needs nothing sends no
    # request at all, whatever the token (nothing is asked of the service).
    dag = write_dag(enrich.format(token=""))
    assert str(dag.run().state) == "success" and namelookup.remaining() == 98
    dag = write_dag(enrich.format(token="namelookup_conn_id='namelookup_bad_token', "))
    assert str(dag.run().state) == "success" and dag.xcom("enrich")["requests"] == 0

    # Tables that exist and a name to look up: the wrong token fails before any lookup, and says
    # that nothing was paid for (the rows it could write, an invalid name's, are written).
    house.insert(table, [(5, "Clara", None), (6, "", None)])
    capfd.readouterr()
    caplog.clear()
    run = dag.run()
    assert dag.state("enrich") == "failed" and _tries(run, "enrich") == 1
    logged = _logged(capfd, caplog)
    assert ("Stopped: invalid-auth-token (HTTP 400) from connection 'namelookup_bad_token': The bearer token is "
            "invalid; fix the API token: the password of connection 'namelookup_bad_token'; nothing was paid for."
            ) in logged
    assert ".." not in logged.replace("...", "") and "wrong-token-0123456789" not in logged
    assert namelookup.remaining() == 98


@pytest.mark.parametrize(("operator", "expected"), [
    ("GenderLookupOperator(task_id='lookup', queries=['Anna'], namelookup_conn_id={warehouse!r}, {retries})",
     "namelookup_conn_id 'warehouse_sqlite' is a sqlite connection, a warehouse's: namelookup_conn_id must name "
     "the service's connection (type namelookup, the API token in its password)"),
    ("SqlGenderLookupOperator(task_id='lookup', conn_id={warehouse!r}, source_table={table!r}, "
     "key_column='customer_id', name_column='name', namelookup_conn_id={warehouse!r}, {retries})",
     "namelookup_conn_id 'warehouse_sqlite' is a sqlite connection, a warehouse's"),
    ("SqlGenderLookupOperator(task_id='lookup', conn_id='namelookup_default', source_table={table!r}, "
     "key_column='customer_id', name_column='name', {retries})",
     "conn_id 'namelookup_default' is a 'namelookup' connection (NameLookupHook), not a SQL warehouse's: conn_id "
     "must name the connection of the warehouse holding the table"),
    ("NameLookupCreditsSensor(task_id='lookup', namelookup_conn_id={warehouse!r}, poke_interval=0.1, timeout=30, "
     "soft_fail=True, {retries})", "namelookup_conn_id 'warehouse_sqlite' is a sqlite connection, a warehouse's"),
])
def test_a_connection_of_the_wrong_type_fails_the_task_at_once_saying_what_to_change(
        operator: str, expected: str, write_dag: Any, namelookup: Any, sqlite_warehouse: Any,
        capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    """Issue 36: the service's connection given as the warehouse's, or the other way round, can never
    work; before, the first was sent HTTP requests it never answered (retried), the second failed on
    common-sql's 'does not support it' (retried), and the sensor poked until its timeout."""
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    dag = write_dag(operator.format(retries=RETRIES, warehouse=sqlite_warehouse.conn_id, table=table))
    run = dag.run()
    assert dag.state("lookup") == "failed" and _tries(run, "lookup") == 1
    assert expected in _logged(capfd, caplog)
    assert not sqlite_warehouse.has_table(f"{table}_gender") and namelookup.remaining() == 100


# A need beyond max_credits, before any table is made (issue 50, item 1) ---------------------------------

def test_a_need_beyond_max_credits_fails_every_operator_at_once_before_any_table_is_made(
        house: Any, write_dag: Any, namelookup: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """Before, the refusal was retried (three tries with retries=2) and the target and answers tables
    had been created, holding the invalid rows. No retry can succeed: the budget is the DAG's."""
    table = house.create_customers([(1, "Anna", None), (2, "Ben", None), (3, "Carla", None), (4, "", None)])
    source = f"conn_id={house.conn_id!r}, source_table={table!r}, key_column='customer_id', name_column='name'"
    names = "queries=['Anna', 'Ben', 'Carla', 'anna']"
    tasks = f"""
        SqlGenderLookupOperator(task_id='table_gender', {source}, max_credits={{gender}}, page_size=1, {RETRIES})
        SqlCountryOfOriginOperator(task_id='table_origin', {source}, max_credits={{origin}}, page_size=1, {RETRIES})
        GenderLookupOperator(task_id='xcom_gender', {names}, max_credits={{gender}}, {RETRIES})
        CountryOfOriginOperator(task_id='xcom_origin', {names}, max_credits={{origin}}, {RETRIES})
    """
    every = ("table_gender", "table_origin", "xcom_gender", "xcom_origin")
    dag = write_dag(tasks.format(gender=2, origin=5))
    run = dag.run()
    assert [(dag.state(t), _tries(run, t)) for t in every] == [("failed", 1)] * 4
    assert not any(house.has_table(t) for t in (f"{table}_gender", f"{table}_origin", house.answers_table))
    logged = _logged(capfd, caplog)
    for needed, limit in ((3, 2), (6, 5)):
        assert (f"insufficient-credits: this run needs {needed} credits but only {limit} are available (limited by "
                f"max_credits={limit}); nothing was spent. Raise max_credits, buy credits, or set "
                "on_insufficient_credits='partial'. (no retry can fix this") in logged
    assert "Retrying in" not in logged and "up_for_retry" not in logged.lower()
    assert namelookup.remaining() == 100

    # With the budget raised, each distinct query is paid once (the tables made while the lookups
    # start as the source is read, on a warehouse that reads on a connection of its own), and a
    # rerun pays nothing.
    dag = write_dag(tasks.format(gender=3, origin=6))
    assert str(dag.run().state) == "success"
    assert namelookup.remaining() == 100 - 2 * (3 + 6)  # the XCom tasks keep no answers across tasks
    assert house.rows(f"SELECT COUNT(*) FROM {table}_gender")[0][0] == 4
    assert str(dag.run().state) == "success"
    assert namelookup.remaining() == 100 - 2 * (3 + 6) - (3 + 6)  # the XCom tasks pay again; the tables do not
    assert (dag.xcom("table_gender")["credits_used"], dag.xcom("table_origin")["credits_used"]) == (0, 0)


def test_a_need_beyond_the_account_s_credits_alone_is_retried_and_makes_no_table(
        house: Any, write_dag: Any, namelookup: Any, capfd: pytest.CaptureFixture[str],
        caplog: pytest.LogCaptureFixture) -> None:
    """Credits can be bought between tries, so this refusal keeps the task's retries; each try still
    stops before any table exists."""
    namelookup.set_credits(2)
    table = house.create_customers([(1, "Anna", None), (2, "Ben", None), (3, "Carla", None)])
    dag = write_dag(f"SqlGenderLookupOperator(task_id='enrich', conn_id={house.conn_id!r}, source_table={table!r}, "
                    f"key_column='customer_id', name_column='name', {RETRIES})")
    run = dag.run()
    assert dag.state("enrich") == "failed" and _tries(run, "enrich") == 3
    assert not house.has_table(f"{table}_gender") and not house.has_table(house.answers_table)
    logged = _logged(capfd, caplog)
    assert "only 2 are available (limited by the account's 2 remaining credits)" in logged
    assert "no retry can fix this" not in logged
    assert namelookup.remaining() == 2


def test_a_templated_argument_its_rule_refuses_fails_at_once(write_dag: Any, namelookup: Any, sqlite_warehouse: Any,
                                                             capfd: pytest.CaptureFixture[str],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    """Issue 50, item 1: every retry renders the template the same way; these were retried (a plain
    ValueError). Arguments that are not templated already fail when the DAG is parsed."""
    table = sqlite_warehouse.create_customers([(1, "Anna", None)])
    dag = write_dag(f"""
        GenderLookupOperator(task_id="budget", queries=["Anna"], max_credits="{{{{ 'many' }}}}", {RETRIES})
        GenderLookupOperator(task_id="queries", queries="{{{{ 'Anna' }}}}", {RETRIES})
        SqlGenderLookupOperator(task_id="threshold", conn_id={sqlite_warehouse.conn_id!r}, source_table={table!r},
                                key_column="customer_id", name_column="name", min_probability="{{{{ 'high' }}}}",
                                {RETRIES})
        NameLookupCreditsSensor(task_id="sensor", min_credits="{{{{ 'plenty' }}}}", poke_interval=0.1, timeout=30,
                                soft_fail=True, {RETRIES})
    """)
    run = dag.run()
    tasks = ("budget", "queries", "threshold", "sensor")
    assert [(dag.state(t), _tries(run, t)) for t in tasks] == [("failed", 1)] * 4
    logged = _logged(capfd, caplog)
    for message in ("max_credits must be an integer, got 'many'", "queries must be a list (of names, query objects "
                    "or rows), got a single str", "min_probability must be a number from 0 to 1, got 'high'",
                    "min_credits must be a whole number of credits (0 or more), got 'plenty'"):
        assert f"{message} (no retry can fix this" in logged, message
    assert not sqlite_warehouse.has_table(f"{table}_gender") and namelookup.remaining() == 100
