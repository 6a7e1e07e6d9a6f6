"""Lookup operators: over XCom lists and over SQL tables; the erasure of people from tables."""

from airflow_provider_namelookup.operators.erasure import SqlNameLookupErasureOperator
from airflow_provider_namelookup.operators.evaluation import GenderEvaluationOperator, SqlGenderEvaluationOperator
from airflow_provider_namelookup.operators.warehouse import SqlCountryOfOriginOperator, SqlGenderLookupOperator
from airflow_provider_namelookup.operators.xcom import CountryOfOriginOperator, GenderLookupOperator

__all__ = [
    "CountryOfOriginOperator",
    "GenderEvaluationOperator",
    "GenderLookupOperator",
    "SqlCountryOfOriginOperator",
    "SqlGenderEvaluationOperator",
    "SqlGenderLookupOperator",
    "SqlNameLookupErasureOperator",
]
