"""Telling Airflow's secrets masker of a secret, on every supported Airflow.

Airflow then replaces the secret with ``***`` in task logs and rendered templates.
``apache-airflow-providers-common-compat`` finds the masker on Airflow 2 and 3; its
releases before ``mask_secret`` joined ``airflow.providers.common.compat.sdk`` (which
Airflow 3.2's locked set still has) run only on Airflow 3, where the Task SDK has it.

Example::

    >>> from airflow_provider_namelookup.secret_masking import mask_secret
    >>> mask_secret("a-token-nobody-should-read")
"""

from __future__ import annotations


def mask_secret(secret: str) -> None:
    """Have Airflow mask ``secret`` wherever this process logs or renders it."""
    try:
        from airflow.providers.common.compat.sdk import mask_secret as airflow_mask_secret
    except ImportError:
        from airflow.sdk.log import mask_secret as airflow_mask_secret
    airflow_mask_secret(secret)
