"""The TLS context a client gets: the CA bundle for an ``https`` service, none for plain HTTP."""

from __future__ import annotations

import asyncio
import ssl

from airflow_provider_namelookup.hooks.base import _no_tls_expected
from airflow_provider_namelookup.hooks.namelookup import NameLookupAsyncHook


def test_a_plain_http_client_loads_no_ca_bundle_and_would_trust_no_certificate() -> None:
    context = _no_tls_expected()
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] == 0  # nothing to trust: a TLS attempt fails closed


def test_an_https_client_verifies_against_the_ca_bundle_made_once_per_hook() -> None:
    hook = NameLookupAsyncHook.for_url("https://svc.example", token="x" * 20)

    async def contexts() -> list[object]:
        lanes = await hook.alanes()
        try:
            return [hook._tls, hook._tls]
        finally:
            await lanes.aclose()

    first, again = asyncio.run(contexts())
    assert first is again and isinstance(first, ssl.SSLContext)
    assert first.verify_mode == ssl.CERT_REQUIRED and first.cert_store_stats()["x509_ca"] > 0
