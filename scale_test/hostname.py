"""The host name each Airflow process reports, for deployments of several workers on one machine.

Airflow records the host of every task try (``task_instance.hostname``) from
``[core] hostname_callable``; on one machine every worker would report the same FQDN.
Pointing that option at :func:`worker_hostname` lets each worker process say who it is,
as separate machines or containers would.

Example::

    AIRFLOW__CORE__HOSTNAME_CALLABLE=scale_test.hostname.worker_hostname \\
    NAMELOOKUP_SCALE_HOSTNAME=worker-1 airflow celery worker ...
"""

from __future__ import annotations

import os
import socket

HOSTNAME_ENV = "NAMELOOKUP_SCALE_HOSTNAME"


def worker_hostname() -> str:
    """``$NAMELOOKUP_SCALE_HOSTNAME`` when set, else the machine's FQDN (as Airflow's default)."""
    return os.environ.get(HOSTNAME_ENV) or socket.getfqdn()
