"""The documentation site as a reader sees it: opened from disk in headless Chromium (Debian's, through
selenium) with the network off: the landing page and its navigation, a how-to page with its copy
buttons, the API reference, and the search, which runs offline.

Screenshots of the three pages go to ``$NAMELOOKUP_DOCS_SCREENSHOTS`` (``make screenshots`` sets it to
``docs/screenshots/``), else to the test's temporary directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tests.docs.site import Site
from tests.plugins.test_credits_page import browser, wait  # noqa: F401  (fixture: Debian's chromium, headless)


def _open(driver: Any, page: Path) -> None:
    driver.get(page.as_uri())
    wait(driver, lambda d: d.execute_script("return document.readyState") == "complete")


def _fetched_elsewhere(driver: Any) -> list[str]:
    names = driver.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    return [name for name in names if not name.startswith("file://")]


def test_the_site_reads_offline_with_its_navigation_copy_buttons_and_search(site: Site, browser: Any,  # noqa: F811
                                                                             tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    shots = Path(os.environ.get("NAMELOOKUP_DOCS_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    browser.set_network_conditions(offline=True, latency=0, throughput=0)
    browser.set_window_size(1400, 1000)

    _open(browser, site.html / "index.html")
    assert browser.find_element(By.TAG_NAME, "h1").text.startswith("Name Lookup provider for Apache Airflow")
    sidebar = browser.find_element(By.CSS_SELECTOR, ".sidebar-tree").text
    for title in ("Installation", "Enriching a warehouse table", "Waiting for credits", "Security", "Python API"):
        assert title in sidebar, title
    assert browser.find_elements(By.CSS_SELECTOR, "form.sidebar-search-container input[name=q]")
    assert _fetched_elsewhere(browser) == []
    assert browser.save_screenshot(str(shots / "site-landing.png"))

    _open(browser, site.html / "operators" / "warehouse.html")
    wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "button.copybtn"))
    caption = browser.find_element(By.CSS_SELECTOR, ".code-block-caption").text
    assert "example_dags/namelookup_warehouse_enrichment.py" in caption
    header = [th.text for th in browser.find_elements(By.CSS_SELECTOR, "table.argument-table th")][:4]
    assert header == ["argument", "templated", "credits", "what it does"]
    table = browser.find_element(By.CSS_SELECTOR, "table.argument-table")
    assert table.size["width"] <= table.find_element(By.XPATH, "..").size["width"]  # fits the page
    assert _fetched_elsewhere(browser) == []
    # the table of arguments (instantly: the theme scrolls smoothly, and a screenshot would catch it moving)
    browser.execute_script("document.getElementById('arguments').scrollIntoView({behavior: 'instant'})")
    wait(browser, lambda d: d.execute_script("return window.scrollY") > 500)
    assert browser.save_screenshot(str(shots / "site-howto-warehouse.png"))

    _open(browser, site.html / "api" / "operators.html")
    assert browser.find_element(By.ID, "airflow_provider_namelookup.operators.warehouse.SqlGenderLookupOperator")
    assert _fetched_elsewhere(browser) == []
    assert browser.save_screenshot(str(shots / "site-api-operators.png"))

    _open(browser, site.html / "search.html")
    browser.get(f"{(site.html / 'search.html').as_uri()}?q=SqlCountryOfOriginOperator")
    results = wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "ul.search li"), seconds=30)
    assert any("Enriching a warehouse table" in r.text for r in results), [r.text for r in results]


def test_every_argument_in_one_call_is_seen_whole_however_wide_the_window(site: Site, browser: Any) -> None:  # noqa: F811
    """Issue 50, item 4: the block was cut off at 1,400 px (its longest lines hidden behind a scroll bar).
    At 1,400 px it fits as written; in a narrow window its lines wrap instead of running out of sight."""
    measure = """
        const pre = document.getElementById('table-operator-call').querySelector('pre');
        const wrapped = [pre.scrollWidth, pre.clientWidth];
        pre.style.whiteSpace = 'pre';
        const asWritten = [pre.scrollWidth, pre.clientWidth];
        pre.style.whiteSpace = '';
        return [wrapped, asWritten];
    """
    browser.set_window_size(1400, 1000)
    _open(browser, site.html / "operators" / "warehouse.html")
    wrapped, as_written = browser.execute_script(measure)
    assert as_written[0] <= as_written[1] and wrapped[0] <= wrapped[1], (as_written, wrapped)
    browser.set_window_size(480, 900)
    _open(browser, site.html / "operators" / "warehouse.html")
    wrapped, as_written = browser.execute_script(measure)
    assert as_written[0] > as_written[1], "the narrow window is not narrower than the block"
    assert wrapped[0] <= wrapped[1], wrapped
