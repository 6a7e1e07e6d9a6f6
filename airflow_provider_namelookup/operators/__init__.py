"""Lookup operators: over XCom lists and over SQL tables."""

from airflow_provider_namelookup.operators.sql import SqlCountryOfOriginOperator, SqlGenderLookupOperator
from airflow_provider_namelookup.operators.xcom import CountryOfOriginOperator, GenderLookupOperator

__all__ = [
    "CountryOfOriginOperator",
    "GenderLookupOperator",
    "SqlCountryOfOriginOperator",
    "SqlGenderLookupOperator",
]
