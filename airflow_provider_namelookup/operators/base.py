"""What every lookup operator shares: the service connection, credits policy, concurrency.

Example::

    class MyLookupOperator(NameLookupOperatorBase):
        def execute(self, context):
            async def go():
                async with self.async_hook() as hook:
                    return await hook.get_statistic()
            return asyncio.run(go())
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import cached_property
from typing import Any, ClassVar

from airflow.providers.common.compat.sdk import AirflowFailException, AirflowNotFoundException, BaseHook, BaseOperator

from airflow_provider_namelookup.contract import HINT_FIELDS
from airflow_provider_namelookup.engine.abstain import Abstain
from airflow_provider_namelookup.engine.budget import InsufficientCreditsMode, check_mode
from airflow_provider_namelookup.engine.plan import LookupKind, QueryRules
from airflow_provider_namelookup.engine.run import RunOptions
from airflow_provider_namelookup.errors import (
    UNFIXABLE_SERVICE_ERRORS,
    InvalidArgument,
    NameLookupConnectionMisconfigured,
    NameLookupOverBudget,
    with_what_to_change,
)
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook
from airflow_provider_namelookup.hooks.settings import ClientSettings
from airflow_provider_namelookup.models import NameKind
from airflow_provider_namelookup.operators.token_masking import MasksTokenBeforeRendering
from airflow_provider_namelookup.personal.pseudonym import DEFAULT_PSEUDONYMISATION_CONN_ID, pseudonymisation_key
from airflow_provider_namelookup.usage.recorder import RecordsUsage

UNFIXABLE_BY_RETRY: tuple[type[Exception], ...] = (*UNFIXABLE_SERVICE_ERRORS, AirflowNotFoundException,
                                                   NameLookupOverBudget, InvalidArgument)
"""Errors that the same try would meet again: a missing or invalid token, a wrong base URL, a
request the service rejects as a whole, a service that can never answer as configured (https to
a plain-HTTP port), a conn_id that is not defined, a need beyond ``max_credits`` in ``fail`` mode, a
templated argument that renders to something its rule refuses.
An operator adds its own (the table operators: a source table, column or ``where`` the warehouse
does not have, a warehouse they do not serve)."""


def service_connection(conn_id: str, parameter: str = "namelookup_conn_id") -> Any:
    """The service's connection ``conn_id``; a warehouse's connection given in its place (which
    would be sent HTTP requests it never answers) is refused at once, saying what to change."""
    from airflow_provider_namelookup.warehouse.dialects import warehouse_of

    conn = BaseHook.get_connection(conn_id)
    if warehouse_of(conn.conn_type) is not None:
        raise NameLookupConnectionMisconfigured(
            f"{parameter} {conn_id!r} is a {conn.conn_type} connection, a warehouse's: {parameter} must name the "
            "service's connection (type namelookup, the API token in its password)")
    return conn


def fail_at_once(err: BaseException) -> AirflowFailException:
    """``err`` as the ``AirflowFailException`` that fails the task without its retries, saying
    what to change (:func:`~airflow_provider_namelookup.errors.what_to_change`)."""
    return AirflowFailException(f"{with_what_to_change(err)} (no retry can fix this; the task fails without retrying)")


@contextmanager
def fail_without_retry_on_unfixable_errors(unfixable: tuple[type[Exception], ...] = UNFIXABLE_BY_RETRY,
                                           ) -> Iterator[None]:
    """Turn the errors no retry can fix into ``AirflowFailException``, so the task fails at once
    instead of spending its retries (as common-sql does for bad SQL). Everything else (credits used
    up, network, 5xx) propagates unchanged and is retried.

    Example::

        def execute(self, context):
            with fail_without_retry_on_unfixable_errors(self.unfixable_errors):
                return self.run_lookups()
    """
    try:
        yield
    except unfixable as err:
        raise fail_at_once(err) from err


class NameLookupOperatorBase(MasksTokenBeforeRendering, RecordsUsage, BaseOperator):
    """Base of the lookup operators; each execution leaves a usage record (:mod:`airflow_provider_namelookup.usage`).

    :param namelookup_conn_id: connection of type ``namelookup`` (token in its password).
    :param max_credits: most credits the service may charge one run (templated), answers lost on the
        way included (they may have been charged: see the Reliability page); None for no budget.
    :param on_insufficient_credits: ``fail`` (default) stops before spending anything when
        the plan needs more than ``max_credits`` or the account's remaining credits;
        ``partial`` spends what it may and leaves the rest for the next run.
    :param check_remaining_credits: ask the account's remaining credits (a free call)
        before spending.
    :param max_concurrency: the most lookup requests in flight at once (the number in
        flight adapts below it); default: the connection's ``max_concurrency`` extra, else 64.
    :param name_kind: ``first_name`` (default), ``full_name`` or ``email``: what a bare name is.
    :param pseudonymise: keep no name in clear (:mod:`airflow_provider_namelookup.personal.pseudonym`):
        the answers table's keys, the service's echoes, a target's ``source_name`` and an XCom
        result's ``input`` hold keyed hashes; the answers stay readable. None (default): on for
        e-mails and full names (a first name with a ``last_name_column`` is a full name), off for
        first names alone (see the docs' "Personal data: keys" page for why).
    :param pseudonymisation_conn_id: the connection whose password is the key (default
        ``namelookup_pseudonymisation``); a missing one fails the task at once, saying how to make it.
    :param log_values: log lines name an invalid row by its key and one of its values; False
        (default): by its key alone, so that no person's name reaches the log.
    """

    lookup: ClassVar[LookupKind]
    ui_color = "#e8f4fd"
    unfixable_errors: ClassVar[tuple[type[Exception], ...]] = UNFIXABLE_BY_RETRY
    """Errors that fail the task at once, without Airflow's retries."""

    def __init__(self, *, name_kind: NameKind = "first_name",
                 namelookup_conn_id: str = NameLookupAsyncHook.default_conn_name,
                 max_credits: int | str | None = None,
                 on_insufficient_credits: InsufficientCreditsMode = "fail",
                 check_remaining_credits: bool = True, max_concurrency: int | None = None,
                 pseudonymise: bool | None = None,
                 pseudonymisation_conn_id: str = DEFAULT_PSEUDONYMISATION_CONN_ID, log_values: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        QueryRules(self.lookup, name_kind)  # a bad name_kind fails when the DAG is parsed
        self.name_kind = name_kind
        check_mode(on_insufficient_credits)
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError(f"max_concurrency must be at least 1, got {max_concurrency}")
        self.namelookup_conn_id = namelookup_conn_id
        self.max_credits = max_credits
        self.on_insufficient_credits = on_insufficient_credits
        self.check_remaining_credits = check_remaining_credits
        self.max_concurrency = max_concurrency
        if pseudonymise is not None and not isinstance(pseudonymise, bool):
            raise ValueError(f"pseudonymise must be True, False or None (the default for name_kind), "
                             f"got {pseudonymise!r}")
        self.pseudonymise = pseudonymise
        self.pseudonymisation_conn_id = pseudonymisation_conn_id
        self.log_values = bool(log_values)

    @property
    def identifies_people(self) -> bool:
        """Whether a value alone names a person (an e-mail, a full name): ``pseudonymise`` is then on
        unless the DAG author turns it off."""
        return self.name_kind in ("email", "full_name")

    @property
    def pseudonymises(self) -> bool:
        """``pseudonymise``, or its default (:attr:`identifies_people`)."""
        return self.identifies_people if self.pseudonymise is None else self.pseudonymise

    @cached_property
    def pseudonymisation_key(self) -> bytes | None:
        """The key of a pseudonymising run, read once (None when it keeps values in clear)."""
        return pseudonymisation_key(self.pseudonymisation_conn_id) if self.pseudonymises else None

    @property
    def credit_limit(self) -> int | None:
        """``max_credits`` after templating, as an integer."""
        if self.max_credits is None or self.max_credits == "":
            return None
        try:
            limit = int(self.max_credits)
        except (TypeError, ValueError):
            raise InvalidArgument(f"max_credits must be an integer, got {self.max_credits!r}") from None
        if limit < 0:
            raise InvalidArgument(f"max_credits must not be negative, got {limit}")
        return limit

    @cached_property
    def client_settings(self) -> ClientSettings:
        """The service connection's settings, read once per run."""
        return ClientSettings.from_connection(service_connection(self.namelookup_conn_id))

    @property
    def forbidden_values(self) -> frozenset[str]:
        """Values no query may carry: the connection's token."""
        token = self.client_settings.token
        return frozenset({token}) if token else frozenset()

    def default_hints(self) -> dict[str, str | None]:
        """Hints for rows that carry none (see :class:`GenderHintsMixin`)."""
        return {}

    def query_rules(self) -> QueryRules:
        """How this run reads its rows."""
        hints = self.default_hints()
        return QueryRules(self.lookup, self.name_kind, default_country=hints.get("default_country"),
                          default_locale=hints.get("default_locale"), default_ip=hints.get("default_ip"),
                          secrets=self.forbidden_values, identity_key=self.pseudonymisation_key)

    def run_options(self, **more: Any) -> RunOptions:
        """How this run may spend (``max_credits`` after templating) and report."""
        return RunOptions(max_credits=self.credit_limit, on_insufficient_credits=self.on_insufficient_credits,
                          check_remaining_credits=self.check_remaining_credits, log_values=self.log_values, **more)

    def is_unfixable(self, error: BaseException) -> bool:
        """Whether ``error`` fails the task at once (see :attr:`unfixable_errors`)."""
        return isinstance(error, (AirflowFailException, *self.unfixable_errors))

    def async_hook(self) -> NameLookupAsyncHook:
        """An async hook for this run over the connection's settings."""
        return self.usage.watch(NameLookupAsyncHook(self.namelookup_conn_id, settings=self.client_settings,
                                                    max_concurrency=self.max_concurrency))


class GenderHintsMixin(NameLookupOperatorBase):
    """Default localisation hints of the gender operators, for rows that carry none.

    Mixed in before the XCom or table base (``class X(GenderHintsMixin, _SqlLookupOperator)``);
    it derives from the operator base so that Airflow's operator metaclass wraps its
    ``__init__`` like any operator's.

    :param country: a country code of the spec's table (templated).
    :param locale: ``xx_YY`` or ``xx-YY`` (templated).
    :param ip: an IPv4 or IPv6 address (templated).
    :param min_probability: an answer whose probability is below it (0 to 1) is written as
        ``unknown``, its probability and samples kept (templated: the accuracy report's
        ``best["min_probability"]`` can be pulled from XCom); see :mod:`~..engine.abstain`.
    :param min_samples: likewise for an answer with fewer samples (templated).
    """

    hint_fields: ClassVar[tuple[str, ...]] = (*HINT_FIELDS, "min_probability", "min_samples")

    def __init__(self, *, country: str | None = None, locale: str | None = None, ip: str | None = None,
                 min_probability: float | str | None = None, min_samples: int | str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.country = country
        self.locale = locale
        self.ip = ip
        self.min_probability = min_probability
        self.min_samples = min_samples
        if not any(isinstance(v, str) and "{{" in v for v in (min_probability, min_samples)):
            Abstain.parse(min_probability=min_probability, min_samples=min_samples)  # fails when the DAG is parsed

    def default_hints(self) -> dict[str, str | None]:
        return {"default_country": self.country or None, "default_locale": self.locale or None,
                "default_ip": self.ip or None}

    def query_rules(self) -> QueryRules:
        return replace(super().query_rules(),
                       abstain=Abstain.parse(min_probability=self.min_probability, min_samples=self.min_samples))
