"""Deferrable triggers."""

from airflow_provider_namelookup.triggers.credits import NameLookupCreditsTrigger

__all__ = ["NameLookupCreditsTrigger"]
