"""The Airflow release this process runs on, as flags: every version check of the provider is here.

Imports that moved between releases come from ``apache-airflow-providers-common-compat``
(``airflow.providers.common.compat.sdk``); what that package cannot bridge (a feature
that exists only from some release on) is decided with these flags, as the Apache
providers do.

Example::

    >>> from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_1_PLUS
    >>> AIRFLOW_V_3_1_PLUS
    True
"""

from __future__ import annotations


def get_base_airflow_version_tuple() -> tuple[int, int, int]:
    """``(major, minor, micro)`` of the installed Airflow, without pre-release or local parts."""
    from airflow import __version__
    from packaging.version import Version

    version = Version(__version__)
    return version.major, version.minor, version.micro


AIRFLOW_V_3_0_PLUS: bool = get_base_airflow_version_tuple() >= (3, 0, 0)
"""Airflow 3: the Task SDK runs tasks, and the UI serves plugins' FastAPI apps (2.11 has neither)."""
AIRFLOW_V_3_1_PLUS: bool = get_base_airflow_version_tuple() >= (3, 1, 0)
"""Airflow has Human-in-the-loop operators (the approval) and React or external views in plugins."""
AIRFLOW_V_3_2_PLUS: bool = get_base_airflow_version_tuple() >= (3, 2, 0)
"""Airflow reads the connection form from the provider info (``conn-fields``, ``ui-field-behaviour``)."""
AIRFLOW_V_3_3_PLUS: bool = get_base_airflow_version_tuple() >= (3, 3, 0)
"""Airflow gives tasks ``context["task_state_store"]``, state that survives a retry."""

__all__ = ["AIRFLOW_V_3_0_PLUS", "AIRFLOW_V_3_1_PLUS", "AIRFLOW_V_3_2_PLUS", "AIRFLOW_V_3_3_PLUS"]
