"""Where an HTML report goes: a local path, or an object store through Airflow's ``ObjectStoragePath``.

A location with a scheme (``s3://``, ``gs://``, ``file://``, ``memory://``, ...) is written
through :class:`airflow.sdk.ObjectStoragePath` (fsspec underneath: the store's filesystem
package must be installed, and ``conn_id`` names the Airflow connection holding its
credentials); anything else is a local file path. Parent folders are created.

Example::

    >>> import tempfile, pathlib
    >>> folder = tempfile.mkdtemp()
    >>> where = write_text(f"{folder}/reports/accuracy.html", "<html></html>")
    >>> pathlib.Path(where).read_text()
    '<html></html>'
"""

from __future__ import annotations

from pathlib import Path


def write_text(location: str, text: str, *, conn_id: str | None = None) -> str:
    """Write ``text`` (UTF-8) at ``location``; returns where it went, as a URL or an absolute path."""
    if not isinstance(location, str) or not location.strip():
        raise ValueError(f"report_path must be a file path or an object storage URL, got {location!r}")
    if "://" in location:
        from airflow.sdk import ObjectStoragePath

        target = ObjectStoragePath(location, conn_id=conn_id)
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("w", encoding="utf-8") as out:
            out.write(text)
        return str(target)
    if conn_id is not None:
        raise ValueError(f"report_conn_id is for object storage URLs (s3://...), but report_path {location!r} "
                         "is a local path")
    path = Path(location).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return str(path)
