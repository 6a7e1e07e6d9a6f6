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
    ratio_rows = browser.find_elements(
        By.XPATH, "//h2[text()='The four ratios']/following-sibling::div[@class='table-scroll'][1]//tr")
    error_coded = [cell.text for cell in ratio_rows[1].find_elements(By.TAG_NAME, "td")]
    assert error_coded[:3] == ["errorCoded", percent(result["ratios"]["errorCoded"]),
                               percent(result["best"]["ratios"]["errorCoded"])]
    best_row = browser.find_element(By.CSS_SELECTOR, "tr.best").find_elements(By.TAG_NAME, "td")
    assert best_row[0].text == str(result["best"]["min_probability"])

    folder = Path(os.environ.get("NAMELOOKUP_SCREENSHOTS") or tmp_path)
    assert browser.save_screenshot(str(folder / "evaluation-report.png"))


OVERFLOWING = """
const view = document.documentElement.clientWidth;
const style = getComputedStyle(document.body);
const page = document.body.getBoundingClientRect();
const content = {left: page.left + parseFloat(style.paddingLeft), right: page.right - parseFloat(style.paddingRight)};
const out = [];
if (document.documentElement.scrollWidth > view + 1) {
  out.push(`the page scrolls sideways: ${document.documentElement.scrollWidth} px wide in a ${view} px window`);
}
for (const table of document.querySelectorAll("table")) {
  let node = table;
  while (node.parentElement !== document.body) { node = node.parentElement; }
  while (node && node.tagName !== "H2") { node = node.previousElementSibling; }
  const heading = node ? node.textContent : "(no heading)";
  let box = table.parentElement;
  while (box !== document.body && !["auto", "scroll"].includes(getComputedStyle(box).overflowX)) {
    box = box.parentElement;
  }
  const scrolls = box !== document.body;
  const frame = scrolls ? box.getBoundingClientRect() : content;
  if (scrolls) { box.scrollLeft = box.scrollWidth; }
  const cells = table.rows[0].cells;
  const last = cells[cells.length - 1].getBoundingClientRect();
  if (frame.right > content.right + 1 || last.right > frame.right + 1) {
    out.push(`${heading}: its last column ends at ${Math.round(last.right)} px, ` +
             `${scrolls ? "scrolled to its end in a box" : "in a page"} whose content ends at ` +
             `${Math.round(frame.right)} px (the page's content at ${Math.round(content.right)} px)`);
  }
  if (scrolls) { box.scrollLeft = 0; }
}
return out;
"""
"""Each table whose last column lies beyond the page's content, where no box around it scrolls."""


def test_every_table_is_reachable_in_its_whole_width(looked_up: list[dict[str, Any]], browser: Any,
                                                     tmp_path: Path) -> None:
    # Issue 36, item 7: the by-country table (ten columns) was cut off at the page's 72 rem.
    result = evaluate(looked_up, max_error_without_na=0.05, group_key="country")
    page = tmp_path / "accuracy.html"
    page.write_text(render_html(result, title="Gender accuracy", source="people"))
    for width in (1280, 800):
        browser.set_window_size(width, 1200)
        browser.get(page.as_uri())
        assert browser.execute_script(OVERFLOWING) == [], f"in a window {width} px wide"
