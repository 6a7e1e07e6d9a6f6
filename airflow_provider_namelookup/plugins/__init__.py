"""Airflow UI plugins of the provider: the "Name Lookup credits" view.

* :mod:`.credits_view`: the ``AirflowPlugin`` (registered in the provider info and as an
  ``airflow.plugins`` entry point);
* :mod:`.app`: its FastAPI app (the page and ``GET /namelookup/api/usage``);
* :mod:`.accounts`: each connection's live statistic, one call a minute at most;
* ``static/``: the page's script and styles, and Chart.js (MIT, shipped: no CDN).
"""
