"""The "Name Lookup credits" view as a person sees it: headless Chromium (Debian's, through selenium)
logged in to a real api-server, the view opened from Airflow's own UI, the numbers on the page checked
against the usage records and the emulator, its link followed, in the light and the dark theme.

Screenshots go to ``$NAMELOOKUP_SCREENSHOTS`` (``make screenshots`` sets it to ``docs/images/``), else to the
test's temporary directory.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.conftest import DOWN_CONN, MINE, THEIRS, UI_CONN, ApiServer, records

pytestmark = pytest.mark.usefixtures("airflow_db")

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
                  "--window-size=1400,1100", "--force-device-scale-factor=1"]


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    chromium, driver_binary = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver_binary):
        message = "Debian's chromium and chromium-driver are not installed (make browser installs them)"
        if os.environ.get("CI") or os.environ.get("NAMELOOKUP_REQUIRE_DATABASES") == "1":
            pytest.fail(message)
        pytest.skip(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in [*CHROMIUM_FLAGS, f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(driver_binary))
    driver.set_page_load_timeout(60)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: Any, condition: Any, seconds: float = 30) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds).until(condition)


def number(text: str) -> int:
    """The whole number a person reads in ``text`` ("4,986" -> 4986)."""
    digits = re.sub(r"[^\d]", "", text)
    assert digits, f"no number in {text!r}"
    return int(digits)


def open_view(driver: Any, server: ApiServer, theme: str, user: str = "admin") -> Any:
    """Log in as ``user`` (the UI's ``_token`` cookie), pick a theme and open the view from the Airflow UI;
    returns the view's iframe, switched into."""
    from selenium.webdriver.common.by import By

    driver.get(f"{server.url}/api/v2/monitor/health")
    driver.add_cookie({"name": "_token", "value": server.token(user), "path": "/"})
    driver.execute_script("window.localStorage.setItem('theme', arguments[0])", theme)
    driver.get(f"{server.url}/plugin/namelookup-credits")
    frame = wait(driver, lambda d: d.find_element(By.CSS_SELECTOR, "iframe[src*='/namelookup/']"))
    driver.switch_to.frame(frame)
    wait(driver, lambda d: d.find_element(By.TAG_NAME, "body").get_attribute("data-loaded") == "30")
    return frame


def screenshot_dir(tmp_path: Path) -> Path:
    where = Path(os.environ.get("NAMELOOKUP_SCREENSHOTS") or tmp_path)
    where.mkdir(parents=True, exist_ok=True)
    return where


def _keep_only_the_records_of(*dag_ids: str) -> None:
    """Delete the usage records other tests of this process wrote since ``spent`` ran: the view lists the
    latest 50 tries, and MINE's (written once per session) would otherwise fall off it."""
    from airflow.models import Variable
    from airflow.utils.session import create_session

    from airflow_provider_namelookup.usage.store import KEY_PREFIX

    with create_session() as session:
        for variable in session.query(Variable).filter(Variable.key.startswith(KEY_PREFIX)).all():
            if not any(f"__{dag_id}__" in variable.key for dag_id in dag_ids):
                session.delete(variable)


def test_the_view_shows_what_was_spent_and_links_to_the_tries(browser: Any, api_server: ApiServer,
                                                              spent: dict[str, Any], tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    shots = screenshot_dir(tmp_path)
    _keep_only_the_records_of(MINE, THEIRS)
    open_view(browser, api_server, "light")
    usage = api_server.get("/namelookup/api/usage?days=30", user="admin").json()

    card = browser.find_element(By.CSS_SELECTOR, f"[data-conn-id='{UI_CONN}']")
    assert number(card.find_element(By.CSS_SELECTOR, "[data-field=remaining]").text) == spent["remaining"]
    assert card.find_element(By.CSS_SELECTOR, "[data-field=limit]").text == "credits left"
    assert "Last month" in card.find_element(By.CSS_SELECTOR, "[data-field=last-month]").text
    down = browser.find_element(By.CSS_SELECTOR, f"[data-conn-id='{DOWN_CONN}']").text
    assert "unavailable" in down and "unreachable" in down

    # the tasks that spent most (other tests of the session may have spent more than ours): every row
    # shown is what the records of that task add up to
    rows = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")]
            for row in browser.find_elements(By.CSS_SELECTOR, "#tasks tbody tr")]
    assert rows
    for dag_id, task_id, credits, requests, tries in rows:
        mine = [r for r in records(dag_id) if r.task_id == task_id]
        assert [number(credits), number(requests), number(tries)] == [
            sum(r.credits_used for r in mine), sum(r.requests for r in mine), len({r.try_key for r in mine})]
    assert sum(r.credits_used for d in (MINE, THEIRS) for r in records(d)) == 5000 - spent["remaining"]

    total = browser.find_element(By.ID, "total")
    assert number(total.text.split(" credits")[0]) == sum(d["credits_used"] for d in usage["daily"])
    drawn = browser.execute_script("""
        const chart = Chart.getChart(document.getElementById('daily-chart'));
        return Object.fromEntries(chart.data.datasets.map(d => [d.label, d.data.reduce((a, b) => a + b, 0)]));""")
    for dag_id in (MINE, THEIRS):
        assert drawn[dag_id] == sum(r.credits_used for r in records(dag_id))
    forecast = browser.find_element(By.ID, "forecast").text
    assert f"{usage['forecast']['days_left']:,} days" in forecast or \
        f"{usage['forecast']['days_left']:,.0f} days" in forecast, forecast
    assert api_server.token("admin") not in browser.page_source

    [link] = [a for a in browser.find_elements(By.CSS_SELECTOR, "#tries tbody a")
              if f"/dags/{MINE}/runs/" in a.get_attribute("href") and a.text == "genders"][:1]
    href = link.get_attribute("href")
    assert href.endswith("/tasks/genders?try_number=1")
    browser.switch_to.default_content()
    browser.save_screenshot(str(shots / "credits-view-light.png"))
    browser.switch_to.frame(browser.find_element(By.CSS_SELECTOR, "iframe[src*='/namelookup/']"))
    link.click()  # the Airflow UI (around the iframe) goes to the task instance
    browser.switch_to.default_content()
    wait(browser, lambda d: f"/dags/{MINE}/runs/" in d.current_url and "/tasks/genders" in d.current_url)
    wait(browser, lambda d: "genders" in d.find_element(By.TAG_NAME, "body").text)

    severe = [e for e in browser.get_log("browser") if e["level"] == "SEVERE" and "/namelookup/" in e["message"]]
    assert not severe, severe


def test_the_view_follows_the_dark_theme_of_the_ui(browser: Any, api_server: ApiServer, spent: dict[str, Any],
                                                   tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    open_view(browser, api_server, "dark")
    html = browser.find_element(By.TAG_NAME, "html")
    assert html.get_attribute("data-theme") == "dark"
    text = browser.execute_script("return getComputedStyle(document.body).color")
    background = browser.execute_script("return getComputedStyle(document.body).backgroundColor")
    assert text == "rgb(228, 228, 231)" and background == "rgba(0, 0, 0, 0)"  # light text on the UI's own dark
    ticks = browser.execute_script(
        "return Chart.getChart(document.getElementById('daily-chart')).options.scales.y.ticks.color")
    assert ticks == "#e4e4e7"
    browser.switch_to.default_content()
    browser.save_screenshot(str(screenshot_dir(tmp_path) / "credits-view-dark.png"))
    # switching the UI's theme switches the view at once, without a reload
    browser.execute_script("document.documentElement.classList.replace('dark', 'light');"
                           "document.documentElement.style.colorScheme = 'light'")
    browser.switch_to.frame(browser.find_element(By.CSS_SELECTOR, "iframe[src*='/namelookup/']"))
    wait(browser, lambda d: d.find_element(By.TAG_NAME, "html").get_attribute("data-theme") == "light", 10)


def test_a_viewer_sees_the_dags_usage_and_no_balance(browser: Any, api_server: ApiServer, spent: dict[str, Any],
                                                     tmp_path: Path) -> None:
    """Issue 25, item 3: the page showed a viewer each try's remaining credits."""
    from selenium.webdriver.common.by import By

    open_view(browser, api_server, "light", user="viewer")
    assert browser.find_element(By.ID, "no-accounts").is_displayed()
    assert browser.find_elements(By.CSS_SELECTOR, "#accounts [data-conn-id]") == []
    tries = browser.find_element(By.ID, "tries")
    assert [th.text for th in tries.find_elements(By.TAG_NAME, "th") if th.is_displayed()] == [
        "Started (UTC)", "DAG", "Task", "Try", "State", "Credits", "Requests", "Cache hits", "Connection"]
    assert any(a.text == "genders" for a in tries.find_elements(By.CSS_SELECTOR, "tbody a"))  # the usage is there
    text = browser.find_element(By.TAG_NAME, "body").text
    balance = spent["remaining"]
    assert f"{balance:,}" not in text and str(balance) not in text
    assert browser.find_element(By.ID, "forecast").text == (
        "No remaining credits known: no connection you may read answered.")
    browser.switch_to.default_content()
    browser.save_screenshot(str(tmp_path / "credits-view-viewer.png"))


def test_the_sidebar_label_is_not_cut(browser: Any, api_server: ApiServer) -> None:
    """Issue 25, item 12: the sidebar showed "Name Lo…". The UI writes a top-level view's name in one
    line under its icon and cuts what does not fit (Airflow 3.3; 3.1 and 3.2 list it under Browse)."""
    from selenium.webdriver.common.by import By

    from airflow_provider_namelookup.version_compat import AIRFLOW_V_3_3_PLUS

    if not AIRFLOW_V_3_3_PLUS:
        pytest.skip("the view is a Browse menu entry before Airflow 3.3")
    browser.get(f"{api_server.url}/api/v2/monitor/health")
    browser.add_cookie({"name": "_token", "value": api_server.token("admin"), "path": "/"})
    browser.get(f"{api_server.url}/")
    button = wait(browser, lambda d: d.find_element(By.CSS_SELECTOR, "a[href$='plugin/namelookup-credits']"))
    label = button.find_elements(By.XPATH, ".//*[normalize-space(text())]")[-1]
    shown = browser.execute_script(
        "const e = arguments[0]; return [e.textContent, e.scrollWidth, e.clientWidth];", label)
    assert shown[0] == "Credits" and shown[1] <= shown[2], shown  # the whole text fits its box
    assert button.get_attribute("aria-label") == "Credits"
