"""The service's hooks: :class:`~airflow_provider_namelookup.hooks.namelookup.NameLookupHook` (sync) and
:class:`~airflow_provider_namelookup.hooks.namelookup.NameLookupAsyncHook` (async), their settings,
their adaptive concurrency and their transport errors."""
