"""The documentation site holds together (issue 34): it builds offline with warnings as errors (the
``site`` fixture), every page is reachable from the index, no internal link or anchor is broken, no
asset comes from the network, every DAG shown comes from ``example_dags/`` and every example is
shown, and the API reference documents every module and every public class and function, each
with a docstring."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import deque
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs.site import CONTRIB, EXAMPLES, Site

PACKAGE = "airflow_provider_namelookup"


class _Page(HTMLParser):
    """The ids of an HTML page and what it refers to: ``links`` (``<a href>``) and ``assets``
    (``<img src>``, ``<script src>``, ``<link href>``, ``<iframe src>``)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.assets: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        for name in ("id", "name"):
            if values.get(name) and (name == "id" or tag == "a"):
                self.ids.add(values[name])
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        elif tag in ("img", "script", "iframe") and values.get("src"):
            self.assets.append(values["src"])
        elif tag == "link" and values.get("href") and "stylesheet" in values.get("rel", "") + "icon preload":
            self.assets.append(values["href"])


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


@pytest.fixture(scope="module")
def parsed(site: Site) -> dict[Path, _Page]:
    return {path.resolve(): _parse(path) for path in site.html.rglob("*.html") if "_static" not in path.parts}


def _local(ref: str) -> bool:
    scheme = urlsplit(ref).scheme
    return not scheme and not ref.startswith("//")


def _target(page: Path, ref: str) -> tuple[Path, str]:
    parts = urlsplit(ref)
    path = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    return path, unquote(parts.fragment)


def test_the_site_builds_in_minutes_not_more(site: Site) -> None:
    # A guard against a runaway build (about 30 s on an idle machine, 45 s with both cores busy),
    # with the margin of a machine whose cores are busy with other work (issue 36).
    assert site.seconds < 300, f"the docs build took {site.seconds:.0f} s"


def test_every_page_is_reachable_from_the_index(site: Site, parsed: dict[Path, _Page]) -> None:
    index = (site.html / "index.html").resolve()
    seen, todo = {index}, deque([index])
    while todo:
        page = todo.popleft()
        for ref in parsed[page].links:
            if _local(ref):
                target, _ = _target(page, ref)
                if target.suffix == ".html" and target in parsed and target not in seen:
                    seen.add(target)
                    todo.append(target)
    pages = {(site.html / f"{name}.html").resolve() for name in site.pages}
    assert pages - seen == set(), [str(p.relative_to(site.html)) for p in pages - seen]


def test_no_internal_link_or_anchor_is_broken(site: Site, parsed: dict[Path, _Page]) -> None:
    broken = []
    for page, content in parsed.items():
        for ref in content.links + content.assets:
            if not _local(ref) or ref.startswith(("mailto:", "javascript:")):
                continue
            target, fragment = _target(page, ref)
            where = f"{page.relative_to(site.html)} -> {ref}"
            if not target.exists():
                broken.append(f"{where}: no such file")
            elif fragment and target.suffix == ".html" and fragment not in parsed[target].ids:
                broken.append(f"{where}: no such anchor")
    assert broken == []


def test_no_asset_comes_from_the_network(site: Site, parsed: dict[Path, _Page]) -> None:
    """Offline: no script, style, font or image is fetched from elsewhere (links out are fine)."""
    remote = [f"{page.relative_to(site.html)}: {ref}" for page, content in parsed.items()
              for ref in content.assets if not _local(ref)]
    styles = [str(p.relative_to(site.html)) for p in site.html.rglob("*.css")
              if "url(http" in p.read_text(encoding="utf-8", errors="replace")
              or "@import url(\"http" in p.read_text(encoding="utf-8", errors="replace")]
    assert remote == [] and styles == []


def test_every_dag_shown_comes_from_example_dags_and_every_example_is_shown(site: Site) -> None:
    included = {b.included_from for b in site.code_blocks if b.included_from is not None}
    # besides the DAGs, the compliance suite's H2 proof (tests/contrib, run by its own tests) is shown
    assert {p.parent for p in included} == {EXAMPLES, CONTRIB}, included
    whole = {b.included_from.name for b in site.code_blocks if b.included_from is not None
             and b.included_from.parent == EXAMPLES and b.text.strip() == b.included_from.read_text().strip()}
    assert whole == {p.name for p in EXAMPLES.glob("*.py")}, "an example DAG shown nowhere in full"


def _modules() -> list[str]:
    package = importlib.import_module(PACKAGE)
    return [PACKAGE, *(m.name for m in pkgutil.walk_packages(package.__path__, f"{PACKAGE}."))]


def _public(module_name: str) -> list[tuple[str, object]]:
    """The classes and functions a module defines whose names do not start with ``_``."""
    module = importlib.import_module(module_name)
    return [(name, obj) for name, obj in vars(module).items()
            if not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            and obj.__module__ == module_name and obj.__name__ == name]


def test_every_public_class_and_function_has_a_docstring() -> None:
    missing = [f"{module}.{name}" for module in _modules() for name, obj in _public(module)
               if not (obj.__doc__ or "").strip()]
    missing += [module for module in _modules() if not (importlib.import_module(module).__doc__ or "").strip()]
    assert missing == []


def test_the_api_reference_documents_every_module_and_public_name(site: Site, parsed: dict[Path, _Page]) -> None:
    ids = set().union(*(content.ids for page, content in parsed.items() if "api" in page.parts))
    absent = [module for module in _modules() if f"module-{module}" not in ids]
    absent += [f"{module}.{name}" for module in _modules() for name, _ in _public(module)
               if f"{module}.{name}" not in ids]
    assert absent == []


def _navigation(page: Path) -> str:
    """The text of a page's own navigation (furo's *On this page*)."""
    html = page.read_text(encoding="utf-8")
    start = html.index('class="toc-tree-container"')
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html[start:html.index("</aside>", start)]))


def _signature(page: Path, target: str) -> str:
    """The text of the signature whose id is ``target``."""
    html = page.read_text(encoding="utf-8")
    start = html.index(f'id="{target}"')
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", "", html[start:html.index("</dt>", start)])))


@pytest.mark.parametrize(("target", "shown"), [
    ("operators.warehouse.SqlGenderLookupOperator",
     ["key_column: str", "name_column: str", "last_name_column: str | None = None", "country: str | None = None",
      "min_probability: float | str | None = None", "conn_id: str | None = None",
      "max_credits: int | str | None = None",
      "namelookup_conn_id: str = 'namelookup_default'", "on_insufficient_credits: InsufficientCreditsMode = 'fail'",
      "plan_only: bool = False", "hook_params: dict | None = None", "**kwargs"]),
    ("operators.warehouse.SqlCountryOfOriginOperator",
     ["key_column: str", "last_name_column: str | None = None", "max_credits_scope: str = 'try'"]),
    ("operators.xcom.GenderLookupOperator", ["queries: Any", "query_field: str | int | None = None",
                                             "country: str | None = None", "max_concurrency: int | None = None"]),
    ("operators.xcom.CountryOfOriginOperator", ["queries: Any", "name_kind: NameKind = 'first_name'"]),
    ("operators.evaluation.SqlGenderEvaluationOperator", ["conn_id: str", "label_column: str = 'label'",
                                                          "max_error_without_na: float = 0.05"]),
    ("operators.evaluation.GenderEvaluationOperator", ["answers: Any", "report_path: str | None = None"]),
    ("sensors.credits.NameLookupCreditsSensor", ["min_credits: int | str = 1", "poke_interval: timedelta | float = 60",
                                                 "mode: str = 'poke'", "soft_fail: bool = False"]),
    ("hooks.namelookup.NameLookupHook", ["namelookup_conn_id: str = 'namelookup_default'",
                                         "max_concurrency: int | None = None"]),
])
def test_the_api_reference_shows_each_public_class_s_whole_signature(site: Site, target: str,
                                                                     shown: list[str]) -> None:
    """Issue 50, item 4: ``SqlGenderLookupOperator(country, locale, ip, min_probability, min_samples,
    **kwargs)``, its other arguments in a private base the reference did not link."""
    page = site.html / "api" / f"{target.split('.')[0]}.html"
    signature = _signature(page, f"{PACKAGE}.{target}")
    assert [text for text in shown if text not in signature] == [], signature
    html = page.read_text(encoding="utf-8")
    start = html.index(f'id="{PACKAGE}.{target}"')
    bases = re.sub(r"<[^>]+>", "", html[start:html.index("</p>", start)])
    assert "Bases:" in bases and " _" not in bases, bases  # a private base is shown as its own bases


@pytest.mark.parametrize("hook", ["NameLookupHook", "NameLookupAsyncHook"])
def test_sign_up_is_shown_with_the_email_a_caller_passes(site: Site, hook: str) -> None:
    """A method callable on the class or a hook reached autodoc bound to both, and autodoc dropped
    its next parameter as if it were ``self``: the reference showed ``sign_up(*, accept_terms, ...)``."""
    signature = _signature(site.html / "api" / "hooks.html", f"{PACKAGE}.hooks.namelookup.{hook}.sign_up")
    assert " sign_up(email: str, *, accept_terms: bool" in signature, signature


@pytest.mark.parametrize(("page", "public", "internal"), [
    ("operators", ["SqlGenderLookupOperator", "GenderLookupOperator", "SqlGenderEvaluationOperator"],
     ["retry_stash", "token_masking", "sql_hook", "operators.base", "NameLookupOperatorBase", "execute()"]),
    ("hooks", ["NameLookupHook", "NameLookupAsyncHook"],
     ["concurrency", "transport_errors", "gender_batch()", "hooks.base", "hooks.sync", "hooks.asynchronous",
      "lanes", "NameLookupHookBase", "ClientLanes"]),
    ("provider", ["errors", "NameLookupError", "smoke"], ["heap", "token_guard", "version_compat", "facts"]),
])
def test_an_api_page_s_navigation_lists_what_a_dag_uses_not_internals(site: Site, page: str, public: list[str],
                                                                      internal: list[str]) -> None:
    """The internals are documented (each module has its anchor), under *Internals*, out of the navigation,
    and so are the methods and attributes of the classes the navigation lists."""
    navigation = _navigation(site.html / "api" / f"{page}.html")
    assert [name for name in public if name not in navigation] == []
    assert [name for name in internal if re.search(rf"(?<![\w.]){re.escape(name)}\b", navigation)] == [], navigation
