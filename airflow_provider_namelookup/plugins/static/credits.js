// The "Name Lookup credits" page: reads api/usage (same origin, the Airflow UI's session cookie)
// and draws it. Charts by Chart.js (static/chart.umd.min.js, shipped with the provider).
"use strict";

(function () {
  const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
                   "#9c755f", "#bab0ac"];
  const number = new Intl.NumberFormat("en-US");
  const decimal = new Intl.NumberFormat("en-US", { maximumFractionDigits: 1 });
  let chart = null;
  let lastData = null;

  // ---- theme: follow the Airflow UI (the page is shown in its iframe), else the browser -------------
  function parentRoot() {
    try {
      return window.parent !== window ? window.parent.document.documentElement : null;
    } catch (e) {
      return null; // another origin: no access
    }
  }

  function themeOf(root) {
    if (!root) return null;
    if (root.classList.contains("dark")) return "dark";
    if (root.classList.contains("light")) return "light";
    const attr = root.getAttribute("data-theme") || root.style.colorScheme;
    return attr === "dark" || attr === "light" ? attr : null;
  }

  function currentTheme() {
    const asked = new URLSearchParams(window.location.search).get("theme");
    if (asked === "dark" || asked === "light") return asked;
    const fromUi = themeOf(parentRoot());
    if (fromUi) return fromUi;
    let stored = null;
    try {
      stored = window.localStorage.getItem("theme") || window.localStorage.getItem("chakra-ui-color-mode");
    } catch (e) { /* storage disabled */ }
    if (stored === "dark" || stored === "light") return stored;
    return window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
  }

  function applyTheme() {
    const theme = currentTheme();
    if (document.documentElement.dataset.theme !== theme) {
      document.documentElement.dataset.theme = theme;
      if (lastData) drawChart(lastData);
    }
  }

  function watchTheme() {
    if (parentRoot()) document.documentElement.dataset.embedded = "";
    applyTheme();
    const root = parentRoot();
    if (root) {
      new MutationObserver(applyTheme).observe(root, { attributes: true, attributeFilter: ["class", "style", "data-theme"] });
    }
    window.addEventListener("storage", applyTheme);
    if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", applyTheme);
  }

  // ---- helpers ---------------------------------------------------------------------------------------
  function css(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined) continue;
      if (key === "class") node.className = value;
      else if (key.startsWith("data-")) node.setAttribute(key, value);
      else node[key] = value;
    }
    for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    return node;
  }

  // A link to a page of the Airflow UI. Inside the UI's iframe (sandboxed without top navigation), a
  // plain click asks the UI's router to go there, as its own links do; elsewhere it is a normal link.
  function uiLink(href, text, title) {
    const link = el("a", { href, title }, text);
    link.addEventListener("click", (event) => {
      const ui = parentRoot() ? window.parent : null;
      if (!ui || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
      event.preventDefault();
      ui.history.pushState({}, "", href);
      ui.dispatchEvent(new PopStateEvent("popstate", { state: {} }));
    });
    return link;
  }

  function fmt(value) {
    return value === null || value === undefined ? "—" : number.format(value);
  }

  function fillTable(id, rows, columns) {
    const body = document.querySelector(`#${id} tbody`);
    body.replaceChildren();
    if (!rows.length) {
      body.append(el("tr", {}, el("td", { class: "empty", colSpan: columns }, "Nothing in this period")));
      return;
    }
    for (const cells of rows) body.append(el("tr", {}, ...cells));
  }

  function days(since, count) {
    const out = [];
    const start = new Date(since);
    start.setUTCHours(0, 0, 0, 0);
    for (let i = 1; i <= count; i++) {
      const day = new Date(start.getTime() + i * 86400000);
      out.push(day.toISOString().slice(0, 10));
    }
    return out;
  }

  // ---- sections ----------------------------------------------------------------------------------------
  function drawAccounts(data) {
    const box = document.getElementById("accounts");
    box.replaceChildren();
    document.getElementById("no-accounts").hidden = data.connections.length > 0;
    for (const c of data.connections) {
      const card = el("article", { class: "card", "data-conn-id": c.conn_id }, el("h3", {}, c.conn_id));
      if (c.error) {
        card.append(el("div", { class: "line" }, el("span", { class: "badge bad" }, "unavailable")),
                    el("div", { class: "line error-text" }, c.error));
      } else {
        const limit = c.is_limit_reached
          ? el("span", { class: "badge bad", "data-field": "limit" }, "limit reached")
          : el("span", { class: "badge ok", "data-field": "limit" }, "credits left");
        card.append(
          el("div", { class: "remaining", "data-field": "remaining" }, fmt(c.remaining_credits)),
          el("div", { class: "muted" }, "credits remaining"),
          el("div", { class: "line" }, limit),
        );
        const month = c.usage_last_month;
        if (month) {
          card.append(el("div", { class: "line", "data-field": "last-month" },
                         `Last month (${month.date}): ${fmt(month.credits_used)} credits`));
        }
      }
      card.append(el("div", { class: "line muted", "data-field": "burn" },
                     c.days_left === null
                       ? `${decimal.format(c.burn_per_day)} credits a day recently`
                       : `${decimal.format(c.burn_per_day)} credits a day: ${decimal.format(c.days_left)} days left`));
      box.append(card);
    }
  }

  function drawForecast(data) {
    const f = data.forecast;
    const text = document.getElementById("forecast");
    text.dataset.burnPerDay = f.burn_per_day;
    text.dataset.daysLeft = f.days_left === null ? "" : f.days_left;
    if (f.remaining_credits === null) {
      text.textContent = "No remaining credits known: no connection you may read answered.";
    } else if (f.days_left === null) {
      text.textContent = `${fmt(f.remaining_credits)} credits left; none spent recently, so they last as long as that lasts.`;
    } else {
      const span = f.window_days === 1 ? "the last day" : `the last ${decimal.format(f.window_days)} days`;
      text.textContent = `${fmt(f.remaining_credits)} credits left at ${decimal.format(f.burn_per_day)} credits a day ` +
        `(${span}): about ${decimal.format(f.days_left)} days.`;
    }
  }

  function drawChart(data) {
    const labels = days(data.since, data.days);
    const dags = [...new Set(data.daily.map((d) => d.dag_id))];
    const byKey = new Map(data.daily.map((d) => [`${d.date}|${d.dag_id}`, d.credits_used]));
    const datasets = dags.map((dag, i) => ({
      label: dag,
      data: labels.map((day) => byKey.get(`${day}|${dag}`) || 0),
      backgroundColor: PALETTE[i % PALETTE.length],
      borderWidth: 0,
    }));
    const total = data.daily.reduce((sum, d) => sum + d.credits_used, 0);
    const totalText = document.getElementById("total");
    totalText.dataset.total = total;
    totalText.textContent = `${fmt(total)} credits in the last ${data.days} days` +
      (dags.length ? `, by ${dags.length} DAG${dags.length === 1 ? "" : "s"}` : "");
    if (typeof Chart === "undefined") return;
    const fg = css("--fg");
    const grid = css("--grid");
    if (chart) chart.destroy();
    chart = new Chart(document.getElementById("daily-chart"), {
      type: "bar",
      data: { labels, datasets },
      options: {
        animation: false,
        maintainAspectRatio: false,
        scales: {
          x: { stacked: true, grid: { display: false },
               ticks: { color: fg, maxRotation: 0, autoSkipPadding: 12,
                        callback(value) { return this.getLabelForValue(value).slice(5); } } },  // MM-DD
          y: { stacked: true, beginAtZero: true, ticks: { color: fg, precision: 0 }, grid: { color: grid },
               title: { display: true, text: "credits", color: fg } },
        },
        plugins: {
          legend: { position: "bottom", labels: { color: fg, boxWidth: 12 } },
          tooltip: { mode: "index", intersect: false, filter: (item) => item.raw > 0 },
        },
      },
    });
  }

  function drawTables(data) {
    const dags = new Map();
    for (const t of data.tasks) {
      const d = dags.get(t.dag_id) || { credits: 0, tries: 0 };
      d.credits += t.credits_used;
      d.tries += t.tries;
      dags.set(t.dag_id, d);
    }
    const dagRows = [...dags.entries()].sort((a, b) => b[1].credits - a[1].credits).slice(0, 10)
      .map(([dag, d]) => [el("td", {}, dag), el("td", { class: "num" }, fmt(d.credits)), el("td", { class: "num" }, fmt(d.tries))]);
    fillTable("dags", dagRows, 3);
    fillTable("tasks", data.tasks.slice(0, 10).map((t) => [
      el("td", {}, t.dag_id), el("td", {}, t.task_id), el("td", { class: "num" }, fmt(t.credits_used)),
      el("td", { class: "num" }, fmt(t.requests)), el("td", { class: "num" }, fmt(t.tries)),
    ]), 5);
    // What a try read of its account comes only with read access to its connection: without it for
    // every try, the column goes.
    const remainingShown = data.tries.some((t) => "remaining_credits" in t);
    document.getElementById("tries").classList.toggle("without-remaining", !remainingShown);
    fillTable("tries", data.tries.map((t) => [
      el("td", {}, t.start.slice(0, 19).replace("T", " ")),
      el("td", {}, t.dag_id),
      el("td", {}, uiLink(t.url, t.map_index >= 0 ? `${t.task_id} [${t.map_index}]` : t.task_id,
                          "Open the task instance in Airflow")),
      el("td", { class: "num" }, t.try_number),
      el("td", { class: `state-${t.state}` }, t.error ? `${t.state} (${t.status_id || t.error})` : t.state),
      el("td", { class: "num" }, fmt(t.credits_used)),
      el("td", { class: "num" }, fmt(t.requests)),
      el("td", { class: "num" }, fmt(t.cache_hits)),
      el("td", { class: "num col-remaining" }, "remaining_credits" in t ? fmt(t.remaining_credits) : ""),
      el("td", {}, t.conn_id),
    ]), 10);
  }

  // ---- loading -----------------------------------------------------------------------------------------
  async function load() {
    const period = document.getElementById("days").value;
    const error = document.getElementById("error");
    const updated = document.getElementById("updated");
    updated.textContent = "Loading…";
    try {
      const response = await fetch(new URL(`api/usage?days=${encodeURIComponent(period)}`, document.baseURI),
                                   { credentials: "same-origin", headers: { Accept: "application/json" } });
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(`${response.status} ${typeof body.detail === "string" ? body.detail : response.statusText}`);
      }
      const data = await response.json();
      lastData = data;
      error.hidden = true;
      drawAccounts(data);
      drawForecast(data);
      drawChart(data);
      drawTables(data);
      updated.textContent = `Updated ${data.generated_at.slice(11, 19)} UTC`;
      document.body.dataset.loaded = period;
    } catch (err) {
      error.textContent = `Could not load the usage: ${err.message}`;
      error.hidden = false;
      updated.textContent = "";
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    watchTheme();
    document.getElementById("days").addEventListener("change", load);
    load();
  });
})();
