"""Usage records: what every execution of a lookup task spent, kept in Airflow's metadata database.

* :mod:`.record`: the record (task instance try, connection, lookup kind, credits, requests,
  retries, cache hits, remaining credits, start and end, how it ended);
* :mod:`.store`: one Airflow Variable per execution, written through the Task SDK and read by
  the api-server (why a Variable and not an XCom: see there);
* :mod:`.recorder`: how the operators and the sensor write it, whatever way a try ends;
* :mod:`.report`: the numbers of the "Name Lookup credits" view
  (:mod:`airflow_provider_namelookup.plugins`).

Example (on a machine with the metadata database, e.g. the api-server)::

    from datetime import datetime, timedelta, timezone
    from airflow.utils.session import create_session
    from airflow_provider_namelookup.usage import store

    with create_session() as session:
        since = datetime.now(timezone.utc) - timedelta(days=30)
        spent = sum(r.credits_used for r in store.read(session, since))
"""
