"""The jars a local Spark needs for Apache Iceberg tables, from PyPI and Debian only (``make spark``).

Iceberg's Spark runtime jar (``iceberg-spark-runtime-3.5_2.12-1.10.2.jar``, shipped on PyPI by
``snowpark-connect-deps-iceberg``) lacks the Jackson it relocates into its own package
(``NoClassDefFoundError: org/apache/iceberg/shaded/com/fasterxml/jackson/core/JsonFactoryBuilder``).
This builds that part: Jackson 2.18.8's annotations, core and databind jars (PyPI's
``snowpark-connect-deps-2``) merged into one jar (without the multi-release
``META-INF/versions`` copies, which relocation would make duplicates) and relocated with
Debian's jarjar (``libjarjar-java``) into ``org.apache.iceberg.shaded.com.fasterxml.jackson``.
Maven Central, where these jars normally come from, is out of reach here.

Example::

    python -m tests.warehouse.spark_jars ~/.cache/airflow-provider-namelookup/spark
    spark_jars(Path("~/.cache/airflow-provider-namelookup/spark").expanduser())
    # ['/.../iceberg-spark-runtime-3.5_2.12-1.10.2.jar', '/.../iceberg-shaded-jackson-2.18.8.jar']
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.2.jar"
JACKSON = "2.18.8"
JACKSON_JAR = f"iceberg-shaded-jackson-{JACKSON}.jar"
JACKSON_WHEEL = "snowpark-connect-deps-2==3.56.7"
JARJAR = Path("/usr/share/java/jarjar.jar")
RULE = "rule com.fasterxml.jackson.** org.apache.iceberg.shaded.com.fasterxml.jackson.@1\n"


def spark_jars(cache: Path) -> list[str]:
    """``spark.jars``: Iceberg's runtime and the relocated Jackson built into ``cache``
    (:class:`FileNotFoundError` naming ``make spark`` when either is missing)."""
    import snowpark_connect_deps_iceberg

    runtime = Path(snowpark_connect_deps_iceberg.get_jar_path(RUNTIME_JAR))
    jackson = cache / JACKSON_JAR
    for jar in (runtime, jackson):
        if not jar.is_file():
            raise FileNotFoundError(f"{jar} is missing (make spark builds it)")
    return [str(runtime), str(jackson)]


def build(cache: Path) -> Path:
    """Download Jackson's jars, merge and relocate them into ``cache``; the jar built."""
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as work:
        tmp = Path(work)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--dest", str(tmp),
                        JACKSON_WHEEL], check=True)
        wheel = zipfile.ZipFile(next(tmp.glob("*.whl")))
        merged = tmp / "jackson-merged.jar"
        seen: set[str] = set()
        with zipfile.ZipFile(merged, "w", zipfile.ZIP_DEFLATED) as out:
            for part in ("annotations", "core", "databind"):
                inner = zipfile.ZipFile(wheel.open(f"snowpark_connect_deps_2/jars/jackson-{part}-{JACKSON}.jar"))
                for entry in inner.infolist():
                    name = entry.filename
                    if name.startswith("META-INF/") or name.endswith("/") or name in seen:
                        continue  # manifests, multi-release copies, module-info kin: not classes Iceberg needs
                    seen.add(name)
                    out.writestr(name, inner.read(entry))
        rules = tmp / "rules.txt"
        rules.write_text(RULE)
        target = cache / JACKSON_JAR
        subprocess.run(["java", "-jar", str(JARJAR), "process", str(rules), str(merged), str(tmp / JACKSON_JAR)],
                       check=True)
        (tmp / JACKSON_JAR).replace(target)
    return target


if __name__ == "__main__":
    print(build(Path(sys.argv[1]).expanduser()))
