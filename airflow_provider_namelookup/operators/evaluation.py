"""How right are the genders: operators that evaluate an enrichment against labelled rows.

They spend no credits and call no service: they read labels beside the answers already
written, run :func:`~airflow_provider_namelookup.evaluation.evaluate`, log a short summary,
write one self-contained HTML report where the user says (a local path, or an object store
URL through ``ObjectStoragePath``), and return the result as XCom (without the tuning
table, which is in the report).

Example::

    from airflow_provider_namelookup.operators import SqlGenderEvaluationOperator, SqlGenderLookupOperator

    enrich = SqlGenderLookupOperator(task_id="enrich", conn_id="warehouse", source_table="people",
                                     key_column="person_id", name_column="first_name", country_column="country")
    accuracy = SqlGenderEvaluationOperator(
        task_id="accuracy",
        conn_id="warehouse",
        source_table="people",                     # its enrichment wrote people_gender
        key_column="person_id",
        label_column="true_gender",                # m/f/u, male/female/unknown, or label_map
        group_column="country",                    # optional: the ratios by country too
        max_error_without_na=0.05,
        report_path="s3://reports/{{ ds }}/gender-accuracy.html", report_conn_id="aws_default",
    )
    enrich >> accuracy
    # XCom: {"confusion": ..., "ratios": ..., "best": {"min_probability": 0.71, ...}, "report": "s3://..."}

**Enrich first, then evaluate: two tasks.** The enrichment task pays only for the rows not
answered yet (a second run costs nothing), so putting it before the evaluation is the way
to evaluate a table that is not fully enriched. It stays its own task on purpose: it keeps
its retries, credit budget, ``plan_only`` and approval gate and usage record, while the
evaluation is free and can be rerun (another bound, another grouping) without touching the
service, and a report that cannot be written never retries a paying task.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import closing
from typing import Any, ClassVar, cast

from airflow.providers.common.compat.sdk import AirflowNotFoundException, BaseOperator, Context, redact
from airflow.providers.common.sql.operators.sql import BaseSQLOperator

from airflow_provider_namelookup.evaluation import evaluate
from airflow_provider_namelookup.evaluation.destination import write_text
from airflow_provider_namelookup.evaluation.evaluate import OnUnreadable
from airflow_provider_namelookup.evaluation.report import plot_or_why_not, render_html, summary_lines
from airflow_provider_namelookup.evaluation.table import TableEvaluationSource
from airflow_provider_namelookup.heap import leaves_older_objects_alone
from airflow_provider_namelookup.models import result_view
from airflow_provider_namelookup.operators.base import fail_without_retry_on_unfixable_errors
from airflow_provider_namelookup.operators.sql_hook import sql_hook, warehouse_hook
from airflow_provider_namelookup.operators.token_masking import MasksTokenBeforeRendering, service_token


class _GenderEvaluationBase(MasksTokenBeforeRendering, BaseOperator):
    """What both evaluation operators share: the evaluation's settings and the report.

    :param max_error_without_na: the bound on ``errorCodedWithoutNA`` the chosen threshold must meet.
    :param min_probability: evaluate as if the gender operators had written with this
        ``min_probability`` (answers strictly below it as unknown); default: as written.
    :param min_samples: the same for ``min_samples``.
    :param thresholds: the tuning table's ``min_probability`` values (default 0.50 to 1.00 by 0.01).
    :param samples_thresholds: the tuning table's ``min_samples`` values (default: ``min_samples``).
    :param label_map: labels beyond m/f/u and male/female/unknown, e.g. ``{"1": "m", "2": "f"}``.
    :param on_unreadable: ``count`` (default): an unreadable row is counted and shown in the
        report; ``raise``: it fails the task, naming the row, the field and the rule.
    :param report_path: where the HTML report goes (templated): a local path or an object
        storage URL (``s3://``, ``gs://``, ``file://``, ...); None for no report. Without
        ``report_base_dir`` it may not go up a folder (``..``) nor through a symbolic link; an
        existing file is replaced only if it is a report this provider wrote
        (:mod:`~airflow_provider_namelookup.evaluation.destination`).
    :param report_base_dir: a folder (or URL prefix) every report must land inside, whatever
        ``report_path`` renders to (not templated: a run's conf cannot move it).
    :param report_conn_id: the Airflow connection of the object store (templated).
    :param report_title: the report's heading (templated).
    :param namelookup_conn_id: the service connection whose token the report, the log and the
        XCom value show as ``***`` wherever a label, group or title holds it (with every other
        secret Airflow knows in the task); no such connection: only those.
    """

    template_fields: Sequence[str] = ("report_path", "report_conn_id", "report_title")
    ui_color = "#eaf5ea"
    group_key: ClassVar[str] = "group"

    def __init__(self, *, max_error_without_na: float = 0.05, min_probability: float | None = None,
                 min_samples: int | None = None, thresholds: Sequence[float] | None = None,
                 samples_thresholds: Sequence[int] | None = None, label_map: Mapping[Any, str] | None = None,
                 on_unreadable: OnUnreadable = "count", report_path: str | None = None,
                 report_conn_id: str | None = None, report_title: str = "Gender lookup accuracy",
                 report_base_dir: str | None = None, namelookup_conn_id: str = "namelookup_default",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.namelookup_conn_id = namelookup_conn_id
        self.settings: dict[str, Any] = {
            "max_error_without_na": max_error_without_na, "min_probability": min_probability,
            "min_samples": min_samples, "thresholds": thresholds, "samples_thresholds": samples_thresholds,
            "label_map": label_map, "on_unreadable": on_unreadable}
        evaluate([], **self.settings)  # bad settings fail when the DAG is parsed, not when it runs
        self.report_path = report_path
        self.report_base_dir = report_base_dir
        self.report_conn_id = report_conn_id
        self.report_title = report_title

    def evaluate_rows(self, rows: Iterable[Mapping[str, Any]], *, grouped: bool, source: str) -> dict[str, Any]:
        """Evaluate, log the summary, write the report; the XCom value."""
        result = evaluate(rows, group_key=self.group_key if grouped else None, **self.settings)
        if grouped:
            result["settings"]["group_key"] = self.group_name
        # Labels, groups and titles are shown as given, but never a secret the task knows.
        result = cast("dict[str, Any]", redact(result))
        title, source = str(redact(self.report_title)), str(redact(source))
        for line in summary_lines(result):
            self.log.info("%s", line)
        report = None
        if self.report_path:
            plotted = plot_or_why_not(result)
            report = write_text(self.report_path, render_html(result, title=title, source=source, plotted=plotted),
                                conn_id=self.report_conn_id or None, base=self.report_base_dir)
            self.log.info("Report: %s", report)
            if plotted[1]:
                self.log.warning("The report has no plot (it says so; every figure is in its tables): %s", plotted[1])
        result.pop("tuning")
        return {**result, "source": source, "report": report}

    @property
    def group_name(self) -> str:
        """What the report calls the groups."""
        return self.group_key


class SqlGenderEvaluationOperator(_GenderEvaluationBase, BaseSQLOperator):
    """Evaluate the genders a :class:`SqlGenderLookupOperator` wrote against a label column.

    :param conn_id: the warehouse connection (a common-sql ``DbApiHook``, templated).
    :param source_table: the enriched table holding the key, the label and the group column.
    :param key_column: its unique key (the target's too).
    :param label_column: the true gender (``m``/``f``/``u``, ``male``/``female``/``unknown``,
        or any spelling in ``label_map``; empty or NULL: unknown, left out).
    :param target_table: the table the enrichment wrote (templated); default ``<source>_gender``.
    :param group_column: a source column to report the ratios by (country, say).
    :param where: a filter of the source rows (templated SQL, the source's column names).
    :param sql: instead of the above, a SELECT whose columns are named ``label``, ``gender``,
        ``probability`` and optionally ``samples``, ``status`` and ``group_column`` (templated).
    """

    template_fields: Sequence[str] = (*BaseSQLOperator.template_fields, *_GenderEvaluationBase.template_fields,
                                      "source_table", "target_table", "where", "sql")
    template_ext: Sequence[str] = (".sql",)
    template_fields_renderers: ClassVar[dict[str, str]] = {"sql": "sql", "where": "sql"}

    def get_db_hook(self) -> Any:
        """The warehouse's common-sql hook (``DatabricksSqlHook`` on a ``databricks`` connection)."""
        return sql_hook(str(self.conn_id), self.hook_params) or super().get_db_hook()

    def __init__(self, *, conn_id: str, source_table: str | None = None, key_column: str | None = None,
                 label_column: str = "label", target_table: str | None = None, group_column: str | None = None,
                 where: str | None = None, sql: str | None = None, **kwargs: Any) -> None:
        super().__init__(conn_id=conn_id, **kwargs)
        self.source_table = source_table
        self.key_column = key_column
        self.label_column = label_column
        self.target_table = target_table
        self.group_column = group_column
        self.where = where
        self.sql = sql
        if not any("{{" in str(getattr(self, field)) for field in ("source_table", "target_table", "where", "sql")):
            self.source_spec()  # a bad name or a missing key fails when the DAG is parsed (else once rendered)

    def source_spec(self, secrets: frozenset[str] = frozenset()) -> TableEvaluationSource:
        """The rows' source; ``secrets`` (the service connection's token, read when the task runs)
        refuses a ``where`` or ``sql`` holding it."""
        return TableEvaluationSource(source_table=self.source_table, key_column=self.key_column,
                                     label_column=self.label_column, target_table=self.target_table,
                                     group_column=self.group_column, where=self.where or None, sql=self.sql,
                                     secrets=secrets)

    @property
    def group_name(self) -> str:
        return self.group_column or self.group_key

    @leaves_older_objects_alone
    def execute(self, context: Context) -> dict[str, Any]:
        # A name, a where or an sql that is wrong now is wrong at every retry: fail at once.
        with fail_without_retry_on_unfixable_errors((ValueError, AirflowNotFoundException)):
            spec = self.source_spec(service_token(self.namelookup_conn_id))
            hook = warehouse_hook(self.get_db_hook, str(self.conn_id))
            # closing(): an evaluation that stops early (on_unreadable="raise") closes the warehouse
            # connection here, in the thread that opened it, not whenever the generator is collected.
            with closing(spec.rows(hook)) as rows:
                return self.evaluate_rows(rows, grouped=self.group_column is not None, source=spec.label)


class GenderEvaluationOperator(_GenderEvaluationBase):
    """Evaluate the answers of a :class:`GenderLookupOperator` (an XCom list) against labels.

    :param answers: the gender operator's output, one result per row (templated; an XComArg
        such as ``genders.output``); an ``{"error": ...}`` row counts as not answered.
    :param labels: the true genders, aligned with ``answers`` (templated).
    :param groups: optional grouping values aligned with ``answers`` (templated).
    :param group_name: what the report calls the groups.

    Example::

        people = [{"first_name": "Andrea", "country": "IT"}, {"first_name": "Kim", "country": "US"}]
        genders = GenderLookupOperator(task_id="genders", queries=people)
        GenderEvaluationOperator(task_id="accuracy", answers=genders.output, labels=["m", "f"],
                                 groups=["IT", "US"], group_name="country", report_path="/reports/a.html")
    """

    template_fields: Sequence[str] = (*_GenderEvaluationBase.template_fields, "answers", "labels", "groups")

    def __init__(self, *, answers: Any, labels: Any, groups: Any = None, group_name: str = "group",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.answers = answers
        self.labels = labels
        self.groups = groups
        self._group_name = group_name

    @property
    def group_name(self) -> str:
        return self._group_name

    @leaves_older_objects_alone
    def execute(self, context: Context) -> dict[str, Any]:
        # Lists that do not line up, or a report_path refused now, are refused again at every retry.
        with fail_without_retry_on_unfixable_errors((ValueError,)):
            answers = _as_list(self.answers, "answers")
            labels = _as_list(self.labels, "labels")
            groups = None if self.groups is None else _as_list(self.groups, "groups")
            for name, values in (("labels", labels), ("groups", groups)):
                if values is not None and len(values) != len(answers):
                    raise ValueError(f"{name} must hold one value per answer: {len(values)} {name} for "
                                     f"{len(answers)} answers")
            rows = (_answer_row(answer, label, None if groups is None else groups[i])
                    for i, (answer, label) in enumerate(zip(answers, labels, strict=True)))
            return self.evaluate_rows(rows, grouped=groups is not None,
                                      source=f"{self.task_id}: {len(answers)} answers")


def _as_list(value: Any, name: str) -> list[Any]:
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ValueError(f"{name} must be a list (an XCom list such as a lookup task's output), "
                         f"got {type(value).__name__}")
    return list(value)


def _answer_row(answer: Any, label: Any, group: Any) -> Any:
    """A gender result (or an error row) as an evaluation row; anything else is passed on to be counted."""
    if not isinstance(answer, Mapping):
        return answer
    view = result_view(None if "error" in answer else answer)
    return {"label": label, "gender": view["gender"], "probability": view["probability"],
            "samples": view["samples"], "group": group}
