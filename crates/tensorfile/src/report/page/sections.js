// The report page, part 4: the report's sections and a tensor's details.

function card(title, id, ...children) {
  return el("section", { class: "card", id: id }, el("h2", { text: title }), ...children);
}

function pairsList(rows) {
  const list = el("dl", { class: "pairs" });
  for (const row of Array.isArray(rows) ? rows : []) {
    if (!Array.isArray(row)) continue;
    list.appendChild(el("dt", { text: String(row[0] ?? "") }));
    list.appendChild(el("dd", { text: row[1] === null || row[1] === undefined ? "—" : String(row[1]) }));
  }
  return list;
}

/** A bars section: a chart with drill-down through `children` and a breadcrumb. */
function barsSection(section, id) {
  const unit = section.unit === "bytes" ? "bytes" : "count";
  const format = unit === "bytes" ? humanBytes : formatFloat;
  const exact = unit === "bytes" ? (v) => formatInt(v) + " bytes" : formatFloat;
  const crumbs = el("nav", { class: "crumbs", "aria-label": "Where you are in the chart" });
  const holder = el("div", { class: "chart-holder" });
  const node = card(String(section.title ?? "Bars"), id, crumbs, holder);
  const path = [{ label: "all", items: Array.isArray(section.items) ? section.items : [] }];
  const limit = 40;
  const draw = () => {
    crumbs.replaceChildren();
    path.forEach((step, i) => {
      if (i > 0) crumbs.appendChild(el("span", { class: "sep", "aria-hidden": "true" }, "›"));
      if (i === path.length - 1) crumbs.appendChild(el("span", { class: "crumb current" }, step.label));
      else {
        crumbs.appendChild(
          el("button", {
            type: "button",
            class: "crumb",
            onclick: () => {
              path.length = i + 1;
              draw();
            },
          }, step.label),
        );
      }
    });
    const drillable = path[0].items.some((item) => item && Array.isArray(item.children) && item.children.length);
    crumbs.hidden = !drillable;
    if (path.length === 1) crumbs.appendChild(el("span", { class: "hint" }, "click a ▸ bar to open it"));
    const items = path[path.length - 1].items.filter((item) => item && typeof item === "object");
    const total = items.reduce((sum, item) => sum + positive(item.value), 0);
    const shown = items.slice(0, limit).map((item) => {
      const label = String(item.label ?? "");
      const drill = Array.isArray(item.children) && item.children.length > 0;
      return {
        label,
        value: item.value,
        drill,
        onClick: drill
          ? () => {
              path.push({ label, items: item.children });
              draw();
            }
          : null,
      };
    });
    holder.replaceChildren();
    if (shown.length === 0) holder.appendChild(el("p", { class: "muted" }, "Nothing to show."));
    else {
      const width = holder.clientWidth || node.clientWidth - 40 || 800;
      holder.appendChild(barChart(shown, { width, format, exact, total, label: String(section.title ?? "") }));
    }
    if (items.length > limit) {
      const rest = items.slice(limit).reduce((sum, item) => sum + (typeof item.value === "number" ? item.value : 0), 0);
      const more = formatInt(items.length - limit) + " more, " + format(rest) + " together";
      holder.appendChild(el("p", { class: "muted small" }, more));
    }
  };
  node.redraw = draw;
  return node;
}

function renderSection(section, id) {
  if (!section || typeof section !== "object") return null;
  const title = String(section.title ?? "");
  if (section.kind === "pairs") return card(title, id, pairsList(section.rows));
  if (section.kind === "table") {
    const columns = Array.isArray(section.columns) ? section.columns.map(String) : [];
    const rows = (Array.isArray(section.rows) ? section.rows : []).filter(Array.isArray);
    const note = section.note ? el("p", { class: "note" }, String(section.note)) : null;
    const node = card(title, id, note, staticTable(columns, rows));
    node.classList.add("wide");
    return node;
  }
  if (section.kind === "bars") return barsSection(section, id);
  const unknown = "(a section of kind " + String(section.kind) + " this page does not know)";
  return card(title, id, el("p", { class: "muted" }, unknown));
}

function statsBlock(stats, state) {
  const box = el("div", { class: "stats" });
  if (stats === undefined) {
    box.appendChild(el("p", { class: "muted" }, "No statistics were gathered for this report."));
    return box;
  }
  if (stats === null) {
    box.appendChild(el("p", { class: "muted" }, "No statistics for this tensor."));
    return box;
  }
  if (typeof stats.error === "string") {
    box.appendChild(el("p", { class: "warning" }, "No statistics: " + stats.error));
    return box;
  }
  const grid = el("dl", { class: "stat-grid" });
  const fields = [
    ["min", stats.min], ["max", stats.max], ["mean", stats.mean], ["std", stats.std], ["absmax", stats.absmax],
    ["elements", stats.numel], ["zeros", stats.zeros], ["NaN", stats.nan],
    ["+inf", stats.posinf], ["−inf", stats.neginf],
  ];
  for (const [name, value] of fields) {
    const bad = (name === "NaN" || name.endsWith("inf")) && typeof value === "number" && value > 0;
    const shown = el("dd", { text: formatFloat(value) });
    grid.appendChild(el("div", { class: "stat" + (bad ? " bad" : "") }, el("dt", { text: name }), shown));
  }
  box.appendChild(grid);
  if (stats.hist && typeof stats.hist === "object") {
    const holder = el("div", { class: "hist" });
    const toggle = el("input", { type: "checkbox", class: "logtoggle" });
    toggle.checked = state.log;
    const draw = () => holder.replaceChildren(histogram(stats.hist, stats, toggle.checked));
    toggle.addEventListener("change", () => {
      state.log = toggle.checked;
      draw();
    });
    const label = el("label", { class: "toggle" }, toggle, " log scale");
    box.appendChild(el("div", { class: "hist-head" }, el("h4", { text: "Histogram" }), label));
    box.appendChild(holder);
    draw();
  }
  return box;
}

function detailFields(columns, types, row) {
  const list = el("dl", { class: "fields" });
  columns.forEach((name, i) => {
    const cell = row[i];
    list.appendChild(el("dt", { text: name }));
    if (types[i] === "bytes" && typeof cell === "number") {
      const exact = Math.abs(cell) >= 1024 ? el("span", { class: "muted" }, " · " + formatInt(cell) + " B") : null;
      list.appendChild(el("dd", { title: formatInt(cell) + " bytes" }, humanBytes(cell), exact));
    } else if (types[i] === "shape" && Array.isArray(cell)) {
      const elements = el("span", { class: "muted" }, " · " + formatInt(numel(cell)) + " elements");
      list.appendChild(el("dd", null, formatShape(cell), elements));
    } else if (types[i] === "status" && cell !== null && cell !== undefined) {
      list.appendChild(el("dd", null, statusPill(cell)));
    } else {
      const missing = cell === null || cell === undefined;
      list.appendChild(el("dd", { class: missing ? "muted" : null }, cellText(types[i], cell)));
    }
  });
  return list;
}
