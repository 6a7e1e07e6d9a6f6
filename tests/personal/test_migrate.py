"""Key rotation and migration (issue 49, item 2): a clear answers table becomes a pseudonymised one,
and a pseudonymised one one under a new key, each without paying again; real DAG runs on SQLite, the
command line in a process of its own."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from typing import Any

import pytest

from airflow_provider_namelookup.contract import LookupKind
from airflow_provider_namelookup.engine.plan import QueryRules
from airflow_provider_namelookup.personal.migrate import migrate_answers
from airflow_provider_namelookup.personal.pseudonym import pseudonym
from airflow_provider_namelookup.warehouse.source import TableSource

pytestmark = pytest.mark.usefixtures("airflow_db")

EMAILS = [(1, "theresa.miller14@example.com", None), (2, "john.smith@example.org", "US"),
          (3, "giulia.rossi@example.it", None), (4, "no-mailbox-here", None)]


def _task(warehouse: Any, table: str, task_id: str, **extra: Any) -> str:
    args = {"conn_id": warehouse.conn_id, "source_table": table, "key_column": "customer_id",
            "name_column": "name", "country_column": "country", "name_kind": "email", **extra}
    return f"SqlCountryOfOriginOperator(task_id={task_id!r}, {', '.join(f'{k}={v!r}' for k, v in args.items())})"


def test_clear_to_pseudonymised_then_a_new_key_pays_nothing(sqlite_warehouse: Any, write_dag: Any, namelookup: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    warehouse = sqlite_warehouse
    table = warehouse.create_customers(EMAILS)
    clear, first, second = (warehouse.table_name(kind) for kind in ("clear", "pseudo", "rotated"))
    dag = write_dag(_task(warehouse, table, "origin", pseudonymise=False, answers_table=clear,
                          target_table=f"{table}_clear"))
    assert str(dag.run().state) == "success" and namelookup.remaining() == 100 - 2 * 3

    command = [sys.executable, "-m", "airflow_provider_namelookup.personal.migrate", "--conn-id", warehouse.conn_id,
               "--source-table", table, "--key-column", "customer_id", "--name-column", "name",
               "--country-column", "country", "--name-kind", "email", "--lookup", "country_of_origin",
               "--from-answers", clear, "--to-answers", first]
    done = subprocess.run(command, capture_output=True, text=True, env=os.environ.copy(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"values": 4, "invalid": 1, "copied": 3,
                                                                 "present": 0, "missing": 0}
    held = warehouse.rows(f"SELECT first_name, last_name, result_json, credits, answered_by FROM {first}")
    assert len(held) == 3 and all(r[3] == 2 and r[4] == "migrated" for r in held)
    texts = " ".join(str(v) for r in held for v in r).lower()
    assert not [w for w in ("theresa", "miller", "smith", "giulia", "rossi", "example") if w in texts]

    pseudonymised = write_dag(_task(warehouse, table, "origin", pseudonymise=True, answers_table=first,
                                    target_table=f"{table}_pseudo"))
    assert str(pseudonymised.run().state) == "success"
    assert (pseudonymised.xcom("origin")["credits_used"], namelookup.remaining()) == (0, 94)  # nothing paid again
    rows = warehouse.rows(f"SELECT customer_id, top_country, source_name FROM {table}_pseudo ORDER BY customer_id")
    assert [r[1] for r in rows[:3]] == [r[0] for r in warehouse.rows(
        f"SELECT top_country FROM {table}_clear ORDER BY customer_id")][:3]
    import airflow_provider_namelookup.personal.pseudonym as keys

    old_key = keys.pseudonymisation_key("namelookup_pseudonymisation")
    assert rows[0][2] == pseudonym(old_key, EMAILS[0][1])

    new_key = secrets.token_hex(32)  # rotation: a new key beside the old one, then the answers re-keyed
    monkeypatch.setenv("AIRFLOW_CONN_NAMELOOKUP_PSEUDONYMISATION_V2",
                       json.dumps({"conn_type": "generic", "password": new_key}))
    source = TableSource(warehouse.dialect, table=table, key_column="customer_id", name_column="name",
                         country_column="country")
    rules = QueryRules(LookupKind.ORIGIN, "email")
    counts = migrate_answers(warehouse.hook, source, rules, from_table=first, to_table=second, from_key=old_key,
                             to_key=new_key.encode())
    assert (counts.copied, counts.missing) == (3, 0)
    again = migrate_answers(warehouse.hook, source, rules, from_table=first, to_table=second, from_key=old_key,
                            to_key=new_key.encode())
    assert (again.copied, again.present) == (0, 3)  # idempotent
    rotated = write_dag(_task(warehouse, table, "origin", pseudonymise=True, answers_table=second,
                              target_table=f"{table}_pseudo",
                              pseudonymisation_conn_id="namelookup_pseudonymisation_v2"))
    assert str(rotated.run().state) == "success"
    assert (rotated.xcom("origin")["credits_used"], namelookup.remaining()) == (0, 94)
    after = warehouse.rows(f"SELECT customer_id, top_country, source_name FROM {table}_pseudo ORDER BY customer_id")
    assert [r[1] for r in after] == [r[1] for r in rows]  # the same answers, now under the new key
    assert after[0][2] == pseudonym(new_key.encode(), EMAILS[0][1]) != rows[0][2]
    json_held = warehouse.rows(f"SELECT result_json FROM {second}")
    assert all(old_key.decode() not in r[0] and "@" not in r[0] for r in json_held)
