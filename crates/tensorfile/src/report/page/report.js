// The report page, part 5: the tensor table, the comparison, the header; main() draws it all.

function buildTensors(data, app, nav, hooks) {
  const tensors = data.tensors && typeof data.tensors === "object" ? data.tensors : { columns: [], rows: [] };
  const columns = (Array.isArray(tensors.columns) ? tensors.columns : []).map(String);
  const rows = (Array.isArray(tensors.rows) ? tensors.rows : []).filter(Array.isArray);
  const stats = Array.isArray(tensors.stats) ? tensors.stats : null;
  const compareRows = new Map();
  const compare = data.compare && typeof data.compare === "object" ? data.compare : null;
  if (compare && Array.isArray(compare.rows) && Array.isArray(compare.columns)) {
    const nameAt = compare.columns.indexOf("name");
    for (const row of compare.rows) if (Array.isArray(row)) compareRows.set(String(row[nameAt]), row);
  }
  const detail = el("aside", { class: "detail", "aria-live": "polite" });
  const state = { log: false };
  const table = new VirtualTable({
    columns,
    rows,
    noun: "tensors",
    selects: ["dtype", "kind", "layout", "encoding", "file"],
    alwaysSelect: "dtype",
    label: "tensors",
    onSelect: (index) => (index < 0 ? placeholder() : showDetail(index)),
  });
  const placeholder = () =>
    detail.replaceChildren(
      el("div", { class: "detail-empty" },
        el("p", null, "Select a tensor to see its fields" + (stats ? ", statistics and histogram." : "."))),
    );
  const close = () => table.select(-1);
  function showDetail(index) {
    const row = rows[index];
    const name = String(row[table.nameIndex] ?? "");
    detail.replaceChildren(
      el("div", { class: "detail-head" },
        el("h3", { class: "mono", text: name, title: name }),
        el("button", { type: "button", class: "close", title: "Close", "aria-label": "Close", onclick: close }, "×")),
      detailFields(columns, table.types, row),
      el("h4", { text: "Statistics" }),
      statsBlock(stats ? stats[index] : undefined, state),
    );
    const other = compareRows.get(name);
    if (other) {
      detail.appendChild(el("h4", { text: "Compared with " + String(compare.other ?? "the other file") }));
      const ccols = compare.columns.map(String);
      detail.appendChild(detailFields(ccols, ccols.map((n, i) => columnType(n, compare.rows, i)), other));
    }
  }
  placeholder();
  const id = "tensors";
  nav.push(["Tensors", id]);
  const node = card("Tensors", id, el("div", { class: "table-layout" }, table.node, detail));
  node.classList.add("wide");
  app.appendChild(node);
  hooks.table = table;
  hooks.stats = stats;
  return table;
}

function buildCompare(data, app, nav, hooks, tensorTable) {
  const compare = data.compare;
  if (!compare || typeof compare !== "object") return;
  const columns = (Array.isArray(compare.columns) ? compare.columns : []).map(String);
  const rows = (Array.isArray(compare.rows) ? compare.rows : []).filter(Array.isArray);
  const id = "compare";
  nav.push(["Compare", id]);
  const statusAt = columns.indexOf("status");
  const counts = new Map();
  for (const row of rows) counts.set(String(row[statusAt]), (counts.get(String(row[statusAt])) || 0) + 1);
  const tensorNames = new Map();
  if (tensorTable) tensorTable.rows.forEach((row, i) => tensorNames.set(String(row[tensorTable.nameIndex]), i));

  const detail = el("aside", { class: "detail" });
  const nameAt = Math.max(0, columns.indexOf("name"));
  const types = columns.map((name, i) => columnType(name, rows, i));
  const emptyDetail = () =>
    detail.replaceChildren(el("div", { class: "detail-empty" }, el("p", null, "Select a row to see its differences.")));
  const table = new VirtualTable({
    columns,
    rows,
    noun: "tensors compared",
    selects: ["status", "dtype", "other_dtype"],
    alwaysSelect: "status",
    label: "compared tensors",
    onSelect: (index) => {
      if (index < 0) return emptyDetail();
      const name = String(rows[index][nameAt] ?? "");
      const parts = [
        el("div", { class: "detail-head" }, el("h3", { class: "mono", text: name, title: name })),
        detailFields(columns, types, rows[index]),
      ];
      if (tensorNames.has(name)) {
        parts.push(el("button", { type: "button", class: "link", onclick: () => {
          tensorTable.reveal(tensorNames.get(name));
          document.getElementById("tensors").scrollIntoView({ behavior: "smooth", block: "start" });
        } }, "Show in the tensor table"));
      }
      detail.replaceChildren(...parts);
    },
  });
  emptyDetail();

  const chips = el("div", { class: "chips" });
  const chipFor = (status, label, n) =>
    el("button", {
      type: "button",
      class: "chip s-" + status,
      onclick: () => table.setColumnFilter("status", status === "all" ? null : status),
    },
      el("span", { class: "chip-n" }, formatInt(n)), " " + label);
  chips.appendChild(chipFor("all", "all", rows.length));
  for (const status of STATUSES) if (counts.has(status)) chips.appendChild(chipFor(status, status, counts.get(status)));
  for (const [status, n] of counts) if (!STATUSES.includes(status)) chips.appendChild(chipFor("other", status, n));

  const head = pairsList([
    ["this file", data.file && data.file.name],
    ["other file", compare.other],
    ["tolerance", "atol " + formatFloat(compare.atol) + " · rtol " + formatFloat(compare.rtol)],
  ]);

  // The worst tensors by a metric, as bars; a click selects the row.
  const metrics = ["nmse", "max_abs", "max_rel", "over_tolerance"].filter((m) => columns.includes(m));
  const chartHolder = el("div", { class: "chart-holder" });
  const scaleNote = el("span", { class: "muted small" });
  const metricSelect = el("select", { class: "select", "aria-label": "Metric of the chart" });
  for (const metric of metrics) metricSelect.appendChild(el("option", { value: metric }, "worst by " + metric));
  const drawChart = () => {
    chartHolder.replaceChildren();
    const metric = metricSelect.value;
    const at = columns.indexOf(metric);
    if (at < 0) return;
    const worst = rows
      .map((row, i) => ({ i, value: row[at] }))
      .filter((item) => typeof item.value === "number" && item.value > 0)
      .sort((a, b) => b.value - a.value)
      .slice(0, 15);
    if (worst.length === 0) {
      const none = "Every tensor compared has " + metric + " 0: nothing to rank.";
      chartHolder.appendChild(el("p", { class: "muted" }, none));
      return;
    }
    const width = chartHolder.clientWidth || 800;
    const log = worst[0].value / worst[worst.length - 1].value > 100;
    scaleNote.textContent = log ? "bar lengths on a log scale" : "";
    chartHolder.appendChild(
      barChart(
        worst.map((item) => ({
          label: String(rows[item.i][nameAt] ?? ""),
          value: item.value,
          onClick: () => table.reveal(item.i),
        })),
        {
          width,
          log,
          format: formatFloat,
          exact: (v) => metric + " " + String(v),
          label: "worst tensors by " + metric,
        },
      ),
    );
  };
  metricSelect.addEventListener("change", drawChart);
  const chartCard = metrics.length
    ? el("div", { class: "compare-chart" },
      el("div", { class: "chart-controls" },
        el("h3", { text: "Largest differences" }), scaleNote, el("span", { class: "grow" }), metricSelect),
      chartHolder)
    : null;
  const node = card(
    "Compared with " + String(compare.other ?? "another file"),
    id,
    el("div", { class: "compare-top" }, head, chips),
    chartCard,
    el("div", { class: "table-layout stacked" }, table.node, detail),
  );
  node.classList.add("wide");
  app.appendChild(node);
  node.redraw = drawChart;
  hooks.compare = table;
  return node;
}

function buildHeader(data, app) {
  const file = data.file && typeof data.file === "object" ? data.file : {};
  const title = String(data.title ?? file.name ?? "tensorfile report");
  document.title = title + " — tensorfile report";
  const subtitle = [];
  if (file.format_title || file.format) subtitle.push(String(file.format_title ?? file.format));
  if (typeof file.bytes === "number") subtitle.push(humanBytes(file.bytes));
  const header = el("header", { class: "top" },
    el("div", { class: "title-row" },
      el("div", null,
        el("div", { class: "eyebrow" }, "tensorfile report"),
        el("h1", { text: title, title: title })),
      el("div", { class: "generator muted small" }, String(data.generator ?? ""))),
    subtitle.length
      ? el("p", { class: "subtitle", title: typeof file.bytes === "number" ? formatInt(file.bytes) + " bytes" : null },
        subtitle.join(" · "))
      : null,
  );
  const summary = el("dl", { class: "summary" });
  for (const pair of Array.isArray(data.summary) ? data.summary : []) {
    if (!Array.isArray(pair)) continue;
    const value = String(pair[1] ?? "—");
    const key = el("dt", { text: String(pair[0] ?? "") });
    summary.appendChild(el("div", { class: "tile" }, key, el("dd", { text: value, title: value })));
  }
  if (summary.children.length) header.appendChild(summary);
  app.appendChild(header);
}

function buildNav(items) {
  const bar = document.getElementById("nav");
  if (!bar) return;
  bar.appendChild(el("span", { class: "brand" }, "tensorfile"));
  const links = el("div", { class: "links" });
  for (const [label, id] of items) links.appendChild(el("a", { href: "#" + id, title: label }, label));
  bar.appendChild(links);
}

function main() {
  const app = document.getElementById("app");
  app.replaceChildren();
  const hooks = {};
  let data;
  try {
    data = readData();
  } catch (error) {
    app.appendChild(el("p", { class: "warning" }, "The report's data could not be read: " + String(error)));
    return;
  }
  if (!data || typeof data !== "object") {
    app.appendChild(el("p", { class: "warning" }, "This report holds no data."));
    return;
  }
  const nav = [];
  buildHeader(data, app);
  if (data.report_version !== 1) {
    const version = "This page draws reports of version 1; this one says version " + String(data.report_version) + ".";
    app.appendChild(el("p", { class: "warning" }, version + " Some of it may be missing."));
  }
  const redraws = [];
  const sections = Array.isArray(data.sections) ? data.sections : [];
  if (sections.length) {
    const grid = el("div", { class: "sections" });
    app.appendChild(grid);
    sections.forEach((section, i) => {
      const id = "section-" + (i + 1);
      const node = renderSection(section, id);
      if (!node) return;
      grid.appendChild(node);
      nav.push([String(section.title ?? "section " + (i + 1)), id]);
      if (node.redraw) redraws.push(node.redraw);
    });
  }
  const table = buildTensors(data, app, nav, hooks);
  const compareNode = buildCompare(data, app, nav, hooks, table);
  if (compareNode) redraws.push(compareNode.redraw);
  const unreadable = (Array.isArray(data.unreadable) ? data.unreadable : []).filter(Array.isArray);
  if (unreadable.length) {
    nav.push(["Unreadable", "unreadable"]);
    const node = card("Unreadable (" + formatInt(unreadable.length) + ")", "unreadable",
      el("p", { class: "note" }, "These tensors are listed by the file but could not be read."),
      staticTable(["name", "reason"], unreadable.map((row) => [String(row[0] ?? ""), String(row[1] ?? "")])));
    node.classList.add("wide", "bad-card");
    app.appendChild(node);
  }
  const made = "Made by " + String(data.generator ?? "tensorfile") + ". This page is self-contained: it loads nothing.";
  app.appendChild(el("footer", { class: "muted small" }, made));
  buildNav(nav);
  // Charts are sized to their box: drawn once laid out, again when the width changes.
  let lastWidth = 0;
  const redrawAll = () => {
    if (app.clientWidth === lastWidth) return;
    lastWidth = app.clientWidth;
    for (const redraw of redraws) redraw();
  };
  redrawAll();
  let resize = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resize);
    resize = setTimeout(redrawAll, 100);
  });

  const tensorTable = hooks.table;
  const compareTable = hooks.compare;
  // A read-only view for tests and for the curious (the browser console).
  window.tensorfileReport = Object.freeze({
    version: data.report_version,
    rows: () => tensorTable.rows.length,
    visible: () => tensorTable.visibleOrder.length,
    renderedRows: () => tensorTable.spacer.children.length,
    visibleColumn: (name, limit) => tensorTable.visibleColumn(name, limit),
    selected: () => tensorTable.selected,
    compareRows: () => (compareTable ? compareTable.rows.length : 0),
    compareVisible: () => (compareTable ? compareTable.visibleOrder.length : 0),
    compareColumn: (name, limit) => (compareTable ? compareTable.visibleColumn(name, limit) : []),
    compareSelected: () => (compareTable ? compareTable.selected : -1),
    charts: () => document.querySelectorAll("svg.chart").length,
  });
}

main();
