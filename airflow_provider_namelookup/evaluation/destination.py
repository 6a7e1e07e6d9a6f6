"""Where an HTML report goes: a local path, or an object store through Airflow's ``ObjectStoragePath``.

A location with a scheme (``s3://``, ``gs://``, ``file://``, ``memory://``, ...) is written
through :class:`airflow.sdk.ObjectStoragePath` (fsspec underneath: the store's filesystem
package must be installed, and ``conn_id`` names the Airflow connection holding its
credentials); anything else is a local file path. Parent folders are created.

``report_path`` is templated, so whoever triggers a run may choose it (``{{ params.x }}``).
It is confined:

- with a ``base`` (the operator's ``report_base_dir``, which is not templated), the report
  must land inside it, once every ``..`` and symbolic link is resolved;
- without one, a path with a ``..`` part or running through a symbolic link is refused;
- an existing file is replaced only if it is a report this provider wrote (its
  ``generator`` line says so), and a local report is written to a temporary file beside it
  and renamed over it, so that a reader never sees half a report and a link is replaced, not
  followed.

Example::

    >>> import tempfile, pathlib
    >>> folder = tempfile.mkdtemp()
    >>> where = write_text(f"{folder}/reports/accuracy.html", "<html></html>")
    >>> pathlib.Path(where).read_text()
    '<html></html>'
    >>> write_text(f"{folder}/reports/../elsewhere.html", "<html></html>")
    Traceback (most recent call last):
    ...
    ValueError: report_path must not go up a folder ('..') without report_base_dir ...
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath

GENERATOR = '<meta name="generator" content="airflow-provider-namelookup accuracy report">'
"""The line every report holds: an existing file without it is never replaced."""


def write_text(location: str, text: str, *, conn_id: str | None = None, base: str | None = None) -> str:
    """Write ``text`` (UTF-8) at ``location``; returns where it went, as a URL or an absolute path.

    :param base: a folder (or URL prefix) the report must land inside; None: no ``..`` and no
        symbolic link on the way.
    :raises ValueError: naming ``report_path`` (or ``report_base_dir``) and the rule it breaks.
    """
    if not isinstance(location, str) or not location.strip():
        raise ValueError(f"report_path must be a file path or an object storage URL, got {location!r}")
    if "://" in location:
        return _write_object(location, text, conn_id, base)
    if conn_id is not None:
        raise ValueError(f"report_conn_id is for object storage URLs (s3://...), but report_path {location!r} "
                         "is a local path")
    path = _confined(Path(location).expanduser(), base)
    path.parent.mkdir(parents=True, exist_ok=True)
    _refuse_foreign(path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None, location)
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return str(path)


def _confined(path: Path, base: str | None) -> Path:
    absolute = Path(os.path.abspath(path))
    if base is not None:
        root = Path(base).expanduser().resolve()
        resolved = absolute.resolve()
        if not resolved.is_relative_to(root):
            raise ValueError(f"report_path {str(path)!r} leads to {str(resolved)!r}, outside report_base_dir "
                             f"{str(root)!r}")
        return resolved
    if ".." in path.parts:
        raise ValueError(f"report_path must not go up a folder ('..') without report_base_dir, got {str(path)!r}")
    for part in (absolute, *absolute.parents):
        if part.is_symlink():
            raise ValueError(f"report_path {str(path)!r} runs through the symbolic link {str(part)!r}; give the "
                             "real path, or set report_base_dir to the folder links may lead into")
    return absolute


def _refuse_foreign(existing: str | None, location: str) -> None:
    if existing is not None and GENERATOR not in existing[:2_000]:
        raise ValueError(f"report_path {location!r} is a file this provider did not write; it is never replaced "
                         "(choose another path, or delete the file)")


def _write_object(location: str, text: str, conn_id: str | None, base: str | None) -> str:
    from airflow.providers.common.compat.sdk import ObjectStoragePath

    rest = location.partition("://")[2]
    if ".." in PurePosixPath(rest).parts:
        raise ValueError(f"report_path must not go up a folder ('..'), got {location!r}")
    if base is not None and not location.startswith(base.rstrip("/") + "/"):
        raise ValueError(f"report_path {location!r} is outside report_base_dir {base!r}")
    target = ObjectStoragePath(location, conn_id=conn_id)
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists():
        with target.open("r", encoding="utf-8", errors="replace") as current:
            _refuse_foreign(current.read(2_000), location)
    with target.open("w", encoding="utf-8") as out:
        out.write(text)
    return str(target)
