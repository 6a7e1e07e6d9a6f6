"""The HTML report as a person sees it: opened from disk in headless Chromium (Debian's, through
selenium) with the network off, nothing fetched, the plot drawn, the tables readable.

The screenshot goes to ``$NAMELOOKUP_SCREENSHOTS`` (``make screenshots`` sets it to ``docs/images/``),
else to the test's temporary directory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from airflow_provider_namelookup.evaluation import evaluate
from airflow_provider_namelookup.evaluation.report import percent, render_html


def test_the_report_renders_offline_with_its_plot(looked_up: list[dict[str, Any]], browser: Any,
                                                  tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    result = evaluate(looked_up, max_error_without_na=0.05, group_key="country")
    page = tmp_path / "accuracy.html"
    page.write_text(render_html(result, title="Gender accuracy: 400 labelled people",
                                source="people LEFT JOIN people_gender"))

    browser.set_network_conditions(offline=True, latency=0, throughput=0)
    browser.set_window_size(1280, 1750)
    browser.get(page.as_uri())
    assert browser.find_element(By.TAG_NAME, "h1").text == "Gender accuracy: 400 labelled people"
    plot = browser.find_element(By.CSS_SELECTOR, ".plot svg")
    assert plot.size["width"] > 600 and plot.size["height"] > 250
    legend = plot.text
    assert all(name in legend for name in ("errorCoded", "errorCodedWithoutNA", "naCoded", "errorGenderBias"))
    # What the page fetched besides itself: nothing.
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0

    cards = [c.text for c in browser.find_elements(By.CSS_SELECTOR, ".card .value")]
    assert cards == [str(result["evaluated"]), str(result["left_out"]), str(result["not_answered"]), "0"]
    ratio_rows = browser.find_elements(By.XPATH, "//h2[text()='The four ratios']/following-sibling::table[1]//tr")
    error_coded = [cell.text for cell in ratio_rows[1].find_elements(By.TAG_NAME, "td")]
    assert error_coded[:3] == ["errorCoded", percent(result["ratios"]["errorCoded"]),
                               percent(result["best"]["ratios"]["errorCoded"])]
    best_row = browser.find_element(By.CSS_SELECTOR, "tr.best").find_elements(By.TAG_NAME, "td")
    assert best_row[0].text == str(result["best"]["min_probability"])

    folder = Path(os.environ.get("NAMELOOKUP_SCREENSHOTS") or tmp_path)
    assert browser.save_screenshot(str(folder / "evaluation-report.png"))
