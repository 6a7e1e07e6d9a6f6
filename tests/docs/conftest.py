"""The built documentation site, once per session (about half a minute)."""

from __future__ import annotations

import pytest

from tests.docs.site import Site, build


@pytest.fixture(scope="session")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    pytest.importorskip("sphinx", reason="the docs extra is not installed (make install installs it)")
    pytest.importorskip("myst_parser", reason="the docs extra is not installed (make install installs it)")
    return build(tmp_path_factory.mktemp("docs-site"))
