"""
### How right are the genders: enrich, then evaluate against genders you know

Two ways to the same accuracy report, each a paying task and then a free one:

1. A **table**: ``enrich_gender`` writes ``customers_gender`` (1 credit per distinct new
   query), then ``table_accuracy`` reads the source's ``true_gender`` column beside what the
   enrichment wrote, by country, and writes an HTML report.
2. An **XCom list**: ``list_genders`` looks a few people up, then ``list_accuracy`` compares
   its answers with their known genders, in the same order.

The evaluations call no service and spend nothing: rerun them (another bound, another
grouping) as often as you like. Their XCom holds ``best["min_probability"]``, the threshold
to pass to the gender operators' ``min_probability``.

Connections: ``namelookup_default`` (type ``namelookup``, the API token in *password*) and
the warehouse ``namelookup_warehouse`` (``NAMELOOKUP_WAREHOUSE_CONN_ID`` to use another;
``NAMELOOKUP_CUSTOMERS_TABLE`` names the table, ``customers`` by default, which needs a
``true_gender`` column). Reports go to ``NAMELOOKUP_REPORT_DIR`` (a local folder or an object
storage URL such as ``s3://bucket/reports``; the system's temporary folder by default).
"""

from __future__ import annotations

import os
import tempfile

import pendulum
from airflow.providers.common.compat.sdk import DAG

from airflow_provider_namelookup.operators import (
    GenderEvaluationOperator,
    GenderLookupOperator,
    SqlGenderEvaluationOperator,
    SqlGenderLookupOperator,
)

WAREHOUSE = os.getenv("NAMELOOKUP_WAREHOUSE_CONN_ID", "namelookup_warehouse")
CUSTOMERS = os.getenv("NAMELOOKUP_CUSTOMERS_TABLE", "customers")
REPORTS = os.getenv("NAMELOOKUP_REPORT_DIR", os.path.join(tempfile.gettempdir(), "namelookup-reports"))

with DAG(
    dag_id="namelookup_gender_accuracy",
    schedule="@weekly",
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    max_active_runs=1,
    tags=["namelookup", "example"],
    doc_md=__doc__,
) as dag:
    # [START howto_operator_sql_gender_evaluation]
    enrich_gender = SqlGenderLookupOperator(
        task_id="enrich_gender",
        conn_id=WAREHOUSE,
        source_table=CUSTOMERS,
        key_column="customer_id",
        name_column="first_name",
        country_column="country",
    )
    table_accuracy = SqlGenderEvaluationOperator(
        task_id="table_accuracy",
        conn_id=WAREHOUSE,
        source_table=CUSTOMERS,            # its enrichment wrote <source>_gender
        key_column="customer_id",
        label_column="true_gender",        # m/f/u, male/female/unknown, or label_map={...}
        group_column="country",            # the ratios by country too
        max_error_without_na=0.05,         # the bound the chosen threshold must meet
        report_path=f"{REPORTS}/{{{{ ds }}}}/{CUSTOMERS}-gender-accuracy.html",
    )
    enrich_gender >> table_accuracy
    # [END howto_operator_sql_gender_evaluation]

    # [START howto_operator_gender_evaluation]
    people = [{"first_name": "Andrea", "country": "IT"}, {"first_name": "Andrea", "country": "DE"},
              {"first_name": "Kim", "country": "US"}, {"first_name": "Sasha", "country": "RU"}]
    list_genders = GenderLookupOperator(task_id="list_genders", queries=people)
    list_accuracy = GenderEvaluationOperator(
        task_id="list_accuracy",
        answers=list_genders.output,           # one answer per person, in order
        labels=["m", "f", "female", None],     # their true genders; None: unknown, left out
        groups=["IT", "DE", "US", "RU"],
        group_name="country",
        report_path=f"{REPORTS}/{{{{ ds }}}}/list-gender-accuracy.html",
    )
    # [END howto_operator_gender_evaluation]
