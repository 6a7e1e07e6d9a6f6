"""The namelookup.* metrics reach a real StatsD socket from a real DAG run, through Airflow's Stats.

The listener is a UDP socket on loopback; Airflow's own StatsD logger (``[metrics] statsd_on``)
sends to it. ``statsd_influxdb_enabled`` puts the tags into the wire format, so the test also
sees which tags go out. A real worker's task runner sets Stats up from the configuration before
a task runs; ``dag.test()`` runs tasks in the test process, so the fixture does that setup the
way each Airflow release's task runner does.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_2_PLUS, AIRFLOW_V_3_3_PLUS
from tests.support import set_connection

pytestmark = pytest.mark.usefixtures("airflow_db")

_LINE = re.compile(r"^(?P<name>[^,:]+)(?P<tags>(?:,[^,:=]+=[^,:]*)*):(?P<value>-?[\d.]+)\|(?P<kind>c|g|ms)")


def configure_stats_like_a_worker() -> None:
    """Set Stats up from the configuration, as the task runner of a worker does on this release."""
    if AIRFLOW_V_3_3_PLUS:
        from airflow.sdk._shared.observability.metrics import stats
        from airflow.sdk.observability.metrics import stats_utils

        stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)
    elif AIRFLOW_V_3_2_PLUS:
        from airflow.sdk.observability.metrics import stats_utils as utils_32
        from airflow.sdk.observability.stats import Stats as Stats32

        Stats32.initialize(factory=utils_32.get_stats_factory(Stats32))
    else:  # 3.1: Stats picks its factory from the configuration when its class is made
        from airflow.configuration import conf
        from airflow.metrics import statsd_logger
        from airflow.metrics.base_stats_logger import NoStatsLogger
        from airflow.stats import Stats as Stats31

        # a function on the metaclass, so Stats.factory() passes Stats as get_statsd_logger's ``cls``
        type(Stats31).factory = (  # type: ignore[attr-defined]
            statsd_logger.get_statsd_logger if conf.getboolean("metrics", "statsd_on") else NoStatsLogger)
        Stats31.instance = None


@dataclass
class Received:
    """Metrics read off the socket: ``values[name]`` lists (value, tags) per packet line."""

    values: dict[str, list[tuple[float, dict[str, str]]]] = field(default_factory=lambda: defaultdict(list))
    kinds: dict[str, str] = field(default_factory=dict)

    def total(self, name: str) -> float:
        return sum(v for v, _ in self.values.get(name, []))


class StatsdListener:
    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.3)
        self.port = self.sock.getsockname()[1]

    def drain(self) -> Received:
        """Everything sent so far (UDP over loopback arrives at once; 0.3 s of silence ends it)."""
        received = Received()
        while True:
            try:
                packet = self.sock.recv(65536).decode()
            except TimeoutError:
                return received
            for line in packet.splitlines():
                match = _LINE.match(line)
                assert match, f"not a StatsD line: {line!r}"
                tags = dict(t.split("=", 1) for t in match["tags"].split(",") if t)
                received.values[match["name"]].append((float(match["value"]), tags))
                received.kinds[match["name"]] = match["kind"]


@pytest.fixture
def statsd(monkeypatch: pytest.MonkeyPatch) -> Iterator[StatsdListener]:
    listener = StatsdListener()
    for key, value in {"STATSD_ON": "True", "STATSD_HOST": "127.0.0.1", "STATSD_PORT": str(listener.port),
                       "STATSD_PREFIX": "airflow", "STATSD_INFLUXDB_ENABLED": "True"}.items():
        monkeypatch.setenv(f"AIRFLOW__METRICS__{key}", value)
    configure_stats_like_a_worker()
    yield listener
    monkeypatch.undo()
    configure_stats_like_a_worker()  # back to the configuration without StatsD
    listener.sock.close()


def recover_after_the_first_503(emulator: Any) -> threading.Event:
    """Answer 503 until one request got it, then recover: that request is retried."""
    served = emulator.stats()["responses_by_status"].get("503", 0)
    emulator.set_faults(error_503=1.0)
    done = threading.Event()

    def watch() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and emulator.stats()["responses_by_status"].get("503", 0) == served:
            time.sleep(0.005)
        emulator.set_faults()
        done.set()

    threading.Thread(target=watch, daemon=True).start()
    return done


@pytest.mark.compat
def test_a_dag_run_sends_metrics_whose_credits_add_up_to_what_the_emulator_charged(
        write_dag: Any, namelookup: Any, emulator: Any, statsd: StatsdListener, sqlite_warehouse: Any) -> None:
    names = ["Anna", "anna", "Theresa", "John", "Giulia", "Sven", "Aiko", "Mia"]
    table = sqlite_warehouse.create_customers([(1, "Ben", None), (2, "Carla", None)])
    sqlite_warehouse.created.append(f"{table}_again")
    charged_before = emulator.stats()["credits_charged"]
    # Retries spread over seconds (not the fixture's 0.3 s), so that the watcher turns the 503s off
    # within them however busy the machine: with both cores loaded it took longer than 0.3 s to.
    set_connection("namelookup_default", {"conn_type": "namelookup", "host": emulator.url, "password": namelookup.token,
                                          "extra": {"backoff_base": 0.05, "max_retries": 12}})
    recovered = recover_after_the_first_503(emulator)
    table_task = ("SqlGenderLookupOperator(task_id={!r}, conn_id=" + repr(sqlite_warehouse.conn_id) + ", source_table="
                  + repr(table) + ", target_table={!r}, key_column='customer_id', name_column='name')")
    dag = write_dag(f"""
        spend = [GenderLookupOperator(task_id="genders", queries={names!r}, check_remaining_credits=False),
                 CountryOfOriginOperator(task_id="origins", queries={names[4:]!r})]
        spend >> NameLookupCreditsSensor(task_id="wait", min_credits=1, poke_interval=0.2, timeout=5)
        # the second table run finds both names answered by the first: 2 cache hits
        {table_task.format("table", table + "_gender")} >> {table_task.format("again", table + "_again")}
    """)
    assert str(dag.run().state) == "success"
    assert recovered.wait(1)
    charged = emulator.stats()["credits_charged"] - charged_before
    got = statsd.drain()

    assert charged == 7 + 2 * 4 + 2
    assert got.total("airflow.namelookup.credits_used") == charged
    assert got.kinds["airflow.namelookup.credits_used"] == "c"
    assert {tags["endpoint"] for _, tags in got.values["airflow.namelookup.credits_used"]} == {
        "gender", "country_of_origin"}
    # 1 gender batch; 1 statistic (the origins' budget) and 4 origins; 1 poke; and the retries of the 503
    assert got.total("airflow.namelookup.retries") >= 1
    # and the first table run's statistic and batch; the second needs no lookup, but creates its target:
    # one statistic call checks the token before the table is made (a rerun into tables that exist sends none)
    assert got.total("airflow.namelookup.requests") == got.total("airflow.namelookup.retries") + 1 + 1 + 4 + 1 + 2 + 1
    assert {tags["status"] for _, tags in got.values["airflow.namelookup.requests"]} == {"2xx", "5xx"}
    assert got.kinds["airflow.namelookup.request_duration"] == "ms"
    assert len(got.values["airflow.namelookup.request_duration"]) == got.total("airflow.namelookup.requests")
    assert got.kinds["airflow.namelookup.remaining_credits"] == "g"
    assert got.values["airflow.namelookup.remaining_credits"][-1][0] == namelookup.remaining()  # the sensor's poke
    # the second table run's rows, answered before it ran ("anna" repeating "Anna" in one run is paid once,
    # but no answer paid before the run: no cache hit)
    assert got.total("airflow.namelookup.cache_hits") == 2

    ours = {name: values for name, values in got.values.items() if ".namelookup." in name}
    assert all(name.startswith("airflow.namelookup.") for name in ours)
    allowed = {"conn_id": {"namelookup_default"}, "endpoint": {"gender", "country_of_origin", "statistic"},
               "status": {"2xx", "4xx", "5xx", "429", "error"}, "lookup": {"gender", "country_of_origin"}}
    for name, values in ours.items():
        for _, tags in values:
            assert set(tags) <= set(allowed), (name, tags)
            assert all(value in allowed[key] for key, value in tags.items()), (name, tags)
    wire = repr(got.values)
    assert namelookup.token not in wire and not any(n in wire for n in names)
