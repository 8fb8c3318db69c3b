// The tensorfile report page: draws the report data (the JSON in #report-data) with the DOM and
// SVG. Every text from the data is set with textContent, createTextNode or setAttribute: names
// come from hostile files. No network, no third-party code.
"use strict";
(function () {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const ROW_HEIGHT = 28;
  const BYTE_COLUMNS = new Set(["bytes", "offset", "stored"]);
  const STATUSES = ["identical", "changed", "only-here", "only-other", "unreadable"];

  // ---- small DOM helpers ----------------------------------------------------------------

  /** An element with attributes and children (strings become text nodes). */
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    setAttrs(node, attrs);
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.appendChild(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    setAttrs(node, attrs);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function setAttrs(node, attrs) {
    if (!attrs) return;
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "text") node.textContent = String(value);
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, String(value));
    }
  }

  /** A tooltip for an SVG shape. */
  function svgTitle(node, text) {
    node.appendChild(svg("title", null, text));
    return node;
  }

  // ---- numbers ----------------------------------------------------------------------------

  const grouped = new Intl.NumberFormat("en-US");

  function formatInt(n) {
    return grouped.format(n);
  }

  function humanBytes(n) {
    if (typeof n !== "number" || !isFinite(n)) return "—";
    const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let value = Math.abs(n);
    let unit = 0;
    while (value >= 1024 && unit < units.length - 1) {
      value /= 1024;
      unit += 1;
    }
    const sign = n < 0 ? "-" : "";
    if (unit === 0) return sign + value + " B";
    const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
    return sign + value.toFixed(digits) + " " + units[unit];
  }

  function formatFloat(x) {
    if (x === null || x === undefined) return "—";
    if (typeof x !== "number") return String(x);
    if (Number.isInteger(x) && Math.abs(x) < 1e15) return formatInt(x);
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return x.toExponential(3);
    return String(Number(x.toPrecision(6)));
  }

  function numel(shape) {
    if (!Array.isArray(shape)) return -1;
    let n = 1;
    for (const d of shape) n *= typeof d === "number" ? d : 0;
    return n;
  }

  function formatShape(shape) {
    return Array.isArray(shape) ? "[" + shape.join(", ") + "]" : shape === null ? "—" : String(shape);
  }

  /** A number of bytes printed humanly, the exact count in its tooltip. */
  function bytesNode(tag, n, cls) {
    return el(tag, { class: cls, title: typeof n === "number" ? formatInt(n) + " bytes" : null }, humanBytes(n));
  }

  // ---- the data -------------------------------------------------------------------------

  function readData() {
    const node = document.getElementById("report-data");
    return JSON.parse(node ? node.textContent : "null");
  }

  // ---- a sortable, filterable table with virtual scrolling ------------------------------

  /** The type of a column from its name and cells: shape, bytes, num, status or text. */
  function columnType(name, rows, index) {
    if (name === "shape") return "shape";
    if (name === "status") return "status";
    let numbers = 0;
    let others = 0;
    for (const row of rows) {
      const cell = row[index];
      if (cell === null || cell === undefined) continue;
      if (Array.isArray(cell)) return "shape";
      if (typeof cell === "number") numbers += 1;
      else others += 1;
      if (others > 0) break;
    }
    if (others === 0 && numbers > 0) return BYTE_COLUMNS.has(name) ? "bytes" : name === "cosine" ? "cosine" : "num";
    return "text";
  }

  function cellText(type, cell) {
    if (cell === null || cell === undefined) return "—";
    if (type === "shape") return formatShape(cell);
    if (type === "bytes") return humanBytes(cell);
    if (type === "num") return formatFloat(cell);
    if (type === "cosine") return formatCosine(cell);
    return String(cell);
  }

  /** A cosine similarity: near 1, as its distance from 1 (the digits that say something). */
  function formatCosine(x) {
    if (typeof x !== "number") return formatFloat(x);
    if (x < 1 && x > 0.999) return "1 − " + (1 - x).toExponential(2);
    return formatFloat(x);
  }

  /** Turns the filter text into a test on names: a glob when it holds `*` or `?`, else a
   * substring; both ignore case. */
  function nameMatcher(text) {
    const query = text.trim().toLowerCase();
    if (query === "") return null;
    if (/[*?]/.test(query)) {
      const pattern = query.replace(/[.+^${}()|[\]\\]/g, "\\$&").replace(/\*/g, ".*").replace(/\?/g, ".");
      const regex = new RegExp("^" + pattern + "$");
      return (name) => regex.test(name);
    }
    return (name) => name.includes(query);
  }

  class VirtualTable {
    /**
     * options: columns, rows, noun ("tensors"), selects (column names with a select),
     * onSelect(index), widths (column name -> CSS track), label (aria label).
     */
    constructor(options) {
      this.columns = options.columns;
      this.rows = options.rows;
      this.noun = options.noun;
      this.onSelect = options.onSelect || null;
      this.types = this.columns.map((name, i) => columnType(name, this.rows, i));
      this.nameIndex = Math.max(0, this.columns.indexOf("name"));
      this.lowerNames = this.rows.map((row) => String(row[this.nameIndex] ?? "").toLowerCase());
      this.order = this.rows.map((_, i) => i);
      this.visibleOrder = this.order;
      this.sortColumn = -1;
      this.sortDescending = false;
      this.selected = -1;
      this.filters = new Map();
      this.matcher = null;
      this.frame = 0;

      const tracks = this.columns.map((name, i) => {
        if (i === this.nameIndex) return "minmax(200px, 4fr)";
        if (this.types[i] === "shape") return "minmax(110px, 1.5fr)";
        if (this.types[i] === "text") return "minmax(80px, 1.1fr)";
        if (this.types[i] === "status") return "minmax(100px, 1fr)";
        if (this.types[i] === "cosine") return "minmax(112px, 1.2fr)";
        return "minmax(84px, 1fr)";
      });
      this.template = tracks.join(" ");
      // Rows are as wide as the viewport, and never narrower than the columns' minimums.
      const minimum = tracks.reduce((sum, track) => sum + Number(/minmax\((\d+)px/.exec(track)[1]), 0);

      this.search = el("input", {
        type: "search",
        class: "search",
        placeholder: "Filter by name (text or glob: *.weight)",
        "aria-label": "Filter " + this.noun + " by name",
        spellcheck: "false",
        autocomplete: "off",
      });
      let debounce = 0;
      const onInput = () => {
        clearTimeout(debounce);
        debounce = setTimeout(() => this.setNameFilter(this.search.value), this.rows.length > 5000 ? 120 : 30);
      };
      this.search.addEventListener("input", onInput);
      this.search.addEventListener("change", onInput);
      this.count = el("span", { class: "count", "aria-live": "polite" });
      const controls = el("div", { class: "controls" }, this.search);
      for (const name of options.selects || []) {
        const index = this.columns.indexOf(name);
        if (index < 0) continue;
        const select = this.makeSelect(name, index, options.alwaysSelect === name);
        if (select) controls.appendChild(select);
      }
      controls.appendChild(this.count);

      this.header = el("div", { class: "vt-head", role: "row" });
      this.header.style.gridTemplateColumns = this.template;
      this.header.style.minWidth = minimum + "px";
      this.headCells = this.columns.map((name, i) => {
        const cell = el(
          "button",
          { type: "button", class: "vt-hcell t-" + this.types[i], role: "columnheader", title: "Sort by " + name },
          el("span", { class: "vt-hname", text: name }),
          el("span", { class: "arrow", "aria-hidden": "true" }),
        );
        cell.addEventListener("click", () => this.sortBy(i));
        this.header.appendChild(cell);
        return cell;
      });
      this.spacer = el("div", { class: "vt-spacer", role: "rowgroup" });
      this.spacer.style.minWidth = minimum + "px";
      this.viewport = el(
        "div",
        { class: "vt-viewport", tabindex: "0", role: "grid", "aria-label": options.label || this.noun },
        this.header,
        this.spacer,
      );
      this.viewport.style.setProperty("--row-h", ROW_HEIGHT + "px");
      this.viewport.addEventListener("scroll", () => this.schedule());
      this.viewport.addEventListener("keydown", (event) => this.onKey(event));
      this.spacer.addEventListener("click", (event) => {
        const row = event.target.closest(".vt-row");
        if (row) this.select(Number(row.dataset.index));
      });
      this.empty = el("div", { class: "vt-empty", hidden: "" }, "No " + this.noun + " match the filter.");
      this.node = el("div", { class: "vt" }, controls, this.viewport, this.empty);
      if (typeof ResizeObserver === "function") new ResizeObserver(() => this.schedule()).observe(this.viewport);
      this.apply();
    }

    makeSelect(name, index, always) {
      const counts = new Map();
      for (const row of this.rows) {
        const value = row[index] === null || row[index] === undefined ? "—" : String(row[index]);
        counts.set(value, (counts.get(value) || 0) + 1);
      }
      if (!always && (counts.size < 2 || counts.size > 60)) return null;
      const values = [...counts.keys()].sort((a, b) => counts.get(b) - counts.get(a) || (a < b ? -1 : 1));
      const select = el(
        "select",
        { class: "select", "aria-label": "Filter by " + name, "data-column": name },
        el("option", { value: "" }, "every " + name),
      );
      for (const value of values) {
        select.appendChild(el("option", { value: "=" + value }, value + " (" + formatInt(counts.get(value)) + ")"));
      }
      select.addEventListener("change", () => {
        if (select.value === "") this.filters.delete(index);
        else this.filters.set(index, select.value.slice(1));
        this.apply();
      });
      return select;
    }

    setNameFilter(text) {
      this.matcher = nameMatcher(text);
      this.apply();
    }

    /** Shows only the rows with this value in `column` (null: every row); for chips. */
    setColumnFilter(column, value) {
      const index = this.columns.indexOf(column);
      if (index < 0) return;
      if (value === null) this.filters.delete(index);
      else this.filters.set(index, value);
      const select = this.node.querySelector('select[data-column="' + column + '"]');
      if (select) select.value = value === null ? "" : "=" + value;
      this.apply();
    }

    sortBy(index) {
      if (this.sortColumn === index) this.sortDescending = !this.sortDescending;
      else {
        this.sortColumn = index;
        const type = this.types[index];
        this.sortDescending = type === "bytes" || type === "num" || type === "shape";
      }
      const type = this.types[index];
      const keys = this.rows.map((row) => {
        const cell = row[index];
        if (cell === null || cell === undefined) return null;
        if (type === "shape") return numel(cell);
        if (typeof cell === "number" && type !== "text" && type !== "status") return cell;
        return String(cell);
      });
      const direction = this.sortDescending ? -1 : 1;
      const order = this.rows.map((_, i) => i);
      order.sort((a, b) => {
        const x = keys[a];
        const y = keys[b];
        if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
        if (x < y) return -direction;
        if (x > y) return direction;
        return a - b;
      });
      this.order = order;
      this.headCells.forEach((cell, i) => {
        cell.classList.toggle("sorted", i === index);
        cell.setAttribute("aria-sort", i === index ? (this.sortDescending ? "descending" : "ascending") : "none");
        cell.querySelector(".arrow").textContent = i === index ? (this.sortDescending ? "▼" : "▲") : "";
      });
      this.apply();
    }

    apply() {
      const filters = [...this.filters.entries()];
      const matcher = this.matcher;
      if (!matcher && filters.length === 0) this.visibleOrder = this.order;
      else {
        this.visibleOrder = this.order.filter((i) => {
          if (matcher && !matcher(this.lowerNames[i])) return false;
          for (const [column, value] of filters) {
            const cell = this.rows[i][column];
            if ((cell === null || cell === undefined ? "—" : String(cell)) !== value) return false;
          }
          return true;
        });
      }
      this.spacer.style.height = this.visibleOrder.length * ROW_HEIGHT + "px";
      this.count.textContent =
        formatInt(this.visibleOrder.length) + " of " + formatInt(this.rows.length) + " " + this.noun;
      this.empty.hidden = this.visibleOrder.length !== 0;
      this.draw();
    }

    schedule() {
      if (this.frame) return;
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.draw();
      });
    }

    /** Draws the rows in view (and a few either side) only. */
    draw() {
      const top = this.viewport.scrollTop;
      const height = this.viewport.clientHeight || 600;
      const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - 6);
      const last = Math.min(this.visibleOrder.length, Math.ceil((top + height) / ROW_HEIGHT) + 6);
      // Rows still in view keep their element (a row at the same place for the same tensor).
      const kept = new Map();
      for (const node of this.spacer.children) kept.set(node.dataset.key, node);
      const nodes = [];
      for (let position = first; position < last; position++) {
        const index = this.visibleOrder[position];
        const node = kept.get(index + "@" + position) || this.drawRow(index, position);
        nodes.push(node);
      }
      if (nodes.length === this.spacer.children.length && nodes.every((node, i) => node === this.spacer.children[i])) return;
      this.spacer.replaceChildren(...nodes);
    }

    drawRow(index, position) {
      const row = this.rows[index];
      const node = el("div", {
        class: "vt-row" + (index === this.selected ? " selected" : "") + (position % 2 ? " odd" : ""),
        role: "row",
        "data-index": index,
        "data-key": index + "@" + position,
        "aria-selected": index === this.selected ? "true" : "false",
      });
      node.style.transform = "translateY(" + position * ROW_HEIGHT + "px)";
      node.style.gridTemplateColumns = this.template;
      this.columns.forEach((name, i) => {
        const type = this.types[i];
        const cell = row[i];
        const text = cellText(type, cell);
        const td = el("div", { class: "vt-cell t-" + type + (cell === null || cell === undefined ? " null" : ""), role: "gridcell" });
        if (type === "status" && cell !== null && cell !== undefined) {
          td.appendChild(el("span", { class: "pill s-" + String(cell).replace(/[^a-z-]/g, "") }, text));
        } else td.textContent = text;
        if (type === "bytes" && typeof cell === "number") td.setAttribute("title", formatInt(cell) + " bytes");
        else if (typeof cell === "number") td.setAttribute("title", String(cell));
        else if (i === this.nameIndex || type === "text" || type === "shape") td.setAttribute("title", text);
        node.appendChild(td);
      });
      return node;
    }

    select(index) {
      this.selected = index;
      for (const row of this.spacer.children) {
        const on = Number(row.dataset.index) === index;
        row.classList.toggle("selected", on);
        row.setAttribute("aria-selected", on ? "true" : "false");
      }
      if (this.onSelect) this.onSelect(index);
    }

    /** Selects and scrolls to the row `index` (clearing filters that hide it). */
    reveal(index) {
      let position = this.visibleOrder.indexOf(index);
      if (position < 0) {
        this.filters.clear();
        this.matcher = null;
        this.search.value = "";
        for (const select of this.node.querySelectorAll("select")) select.value = "";
        this.apply();
        position = this.visibleOrder.indexOf(index);
      }
      this.scrollTo(position);
      this.select(index);
    }

    scrollTo(position) {
      const headerHeight = this.header.offsetHeight;
      const top = position * ROW_HEIGHT;
      const view = this.viewport.clientHeight - headerHeight;
      if (top < this.viewport.scrollTop) this.viewport.scrollTop = top;
      else if (top + ROW_HEIGHT > this.viewport.scrollTop + view) this.viewport.scrollTop = top + ROW_HEIGHT - view;
      this.draw();
    }

    onKey(event) {
      if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
      if (this.visibleOrder.length === 0) return;
      event.preventDefault();
      let position = this.visibleOrder.indexOf(this.selected);
      position = position < 0 ? 0 : position + (event.key === "ArrowDown" ? 1 : -1);
      position = Math.max(0, Math.min(this.visibleOrder.length - 1, position));
      this.scrollTo(position);
      this.select(this.visibleOrder[position]);
    }

    /** The visible values of a column, in order (for the tests' hook). */
    visibleColumn(name, limit) {
      const index = this.columns.indexOf(name);
      if (index < 0) return [];
      const positions = this.visibleOrder.slice(0, limit === undefined ? this.visibleOrder.length : limit);
      return positions.map((i) => this.rows[i][index]);
    }
  }

  // ---- charts ---------------------------------------------------------------------------

  function percent(part, total) {
    const share = (100 * part) / total;
    return share > 0 && share < 0.1 ? "<0.1%" : share.toFixed(1) + "%";
  }

  /** A label at most `max` characters long, cut in the middle (the ends say the most). */
  function shorten(text, max) {
    if (text.length <= max) return text;
    const head = Math.ceil((max - 1) * 0.4);
    return text.slice(0, head) + "…" + text.slice(text.length - (max - 1 - head));
  }

  /**
   * A horizontal bar chart: items {label, value, title?, onClick?, drill?}, largest first.
   * `format` prints a value; `total` (optional) adds each item's share.
   */
  function barChart(items, options) {
    const width = Math.max(360, options.width || 800);
    const rowHeight = 24;
    const labelChars = Math.max(12, Math.min(44, Math.floor((width * 0.36) / 7.2)));
    const labelWidth = labelChars * 7.2 + 16;
    const valueWidth = options.total ? 150 : 96;
    const barSpace = Math.max(40, width - labelWidth - valueWidth - 8);
    const values = items.map((item) => (typeof item.value === "number" && item.value > 0 ? item.value : 0));
    const max = Math.max(...values, 0) || 1;
    // On a log scale the smallest value shown gets a short bar, the largest a full one.
    const low = Math.log10(Math.min(...values.filter((v) => v > 0), max));
    const high = Math.log10(max);
    const share = (v) =>
      v <= 0 ? 0 : !options.log ? v / max : high === low ? 1 : 0.06 + (0.94 * (Math.log10(v) - low)) / (high - low);
    const height = items.length * rowHeight + 4;
    const chart = svg("svg", {
      class: "chart bars",
      width: width,
      height: height,
      viewBox: "0 0 " + width + " " + height,
      role: "img",
      "aria-label": options.label || "bar chart",
    });
    items.forEach((item, i) => {
      const y = i * rowHeight + 2;
      const value = typeof item.value === "number" && item.value > 0 ? item.value : 0;
      const group = svg("g", { class: "bar" + (item.onClick ? " clickable" : ""), transform: "translate(0," + y + ")" });
      let tip = item.label + ": " + options.exact(item.value);
      if (options.total) tip += " (" + percent(value, options.total) + ")";
      if (item.drill) tip += " — click to open";
      svgTitle(group, tip);
      group.appendChild(svg("rect", { class: "track", x: labelWidth, y: 2, width: barSpace, height: rowHeight - 6, rx: 3 }));
      group.appendChild(
        svg("rect", {
          class: "fill",
          x: labelWidth,
          y: 2,
          width: Math.max(value > 0 ? 1.5 : 0, barSpace * share(value)),
          height: rowHeight - 6,
          rx: 3,
        }),
      );
      const label = (item.drill ? "▸ " : "") + shorten(item.label, labelChars - (item.drill ? 2 : 0));
      group.appendChild(svg("text", { class: "label", x: labelWidth - 10, y: rowHeight / 2 + 1, "text-anchor": "end" }, label));
      let valueText = options.format(item.value);
      if (options.total) valueText += "  " + percent(value, options.total);
      group.appendChild(svg("text", { class: "value", x: labelWidth + barSpace + 8, y: rowHeight / 2 + 1 }, valueText));
      if (item.onClick) {
        group.setAttribute("tabindex", "0");
        group.setAttribute("role", "button");
        group.addEventListener("click", item.onClick);
        group.addEventListener("keydown", (event) => {
          if (event.key === "Enter" || event.key === " ") {
            event.preventDefault();
            item.onClick();
          }
        });
      }
      chart.appendChild(group);
    });
    return chart;
  }

  /** The histogram of a tensor's values: hist {edges, counts}, drawn linear or log. */
  function histogram(hist, stats, log) {
    const width = 360;
    const height = 170;
    const pad = { left: 8, right: 8, top: 10, bottom: 34 };
    const counts = hist.counts;
    const edges = hist.edges;
    const chart = svg("svg", {
      class: "chart histogram",
      viewBox: "0 0 " + width + " " + height,
      width: "100%",
      role: "img",
      "aria-label": "histogram of the values",
    });
    if (!Array.isArray(counts) || !Array.isArray(edges) || counts.length === 0 || edges.length !== counts.length + 1) {
      chart.appendChild(svg("text", { x: width / 2, y: height / 2, "text-anchor": "middle", class: "axis" }, "no histogram"));
      return chart;
    }
    const lo = edges[0];
    const hi = edges[edges.length - 1];
    const span = hi - lo || 1;
    const plotWidth = width - pad.left - pad.right;
    const plotHeight = height - pad.top - pad.bottom;
    const scale = (c) => (log ? Math.log10(1 + c) : c);
    const top = Math.max(...counts.map(scale)) || 1;
    const x = (v) => pad.left + ((v - lo) / span) * plotWidth;
    counts.forEach((count, i) => {
      const x0 = hi === lo ? pad.left + (i * plotWidth) / counts.length : x(edges[i]);
      const x1 = hi === lo ? pad.left + ((i + 1) * plotWidth) / counts.length : x(edges[i + 1]);
      const h = (scale(count) / top) * plotHeight;
      const rect = svg("rect", {
        class: "hbar",
        x: x0 + 0.5,
        y: pad.top + plotHeight - h,
        width: Math.max(0.8, x1 - x0 - 1),
        height: Math.max(count > 0 ? 1 : 0, h),
      });
      svgTitle(rect, "[" + formatFloat(edges[i]) + ", " + formatFloat(edges[i + 1]) + "): " + formatInt(count));
      chart.appendChild(rect);
    });
    const baseline = pad.top + plotHeight;
    chart.appendChild(svg("line", { class: "axisline", x1: pad.left, x2: width - pad.right, y1: baseline, y2: baseline }));
    if (stats && typeof stats.mean === "number" && stats.mean >= lo && stats.mean <= hi && hi > lo) {
      const mx = x(stats.mean);
      const mean = svg("line", { class: "meanline", x1: mx, x2: mx, y1: pad.top - 4, y2: baseline });
      svgTitle(mean, "mean " + formatFloat(stats.mean));
      chart.appendChild(mean);
    }
    const labelY = baseline + 16;
    chart.appendChild(svg("text", { class: "axis", x: pad.left, y: labelY, "text-anchor": "start" }, formatFloat(lo)));
    chart.appendChild(svg("text", { class: "axis", x: width - pad.right, y: labelY, "text-anchor": "end" }, formatFloat(hi)));
    if (hi > lo) {
      chart.appendChild(svg("text", { class: "axis", x: width / 2, y: labelY, "text-anchor": "middle" }, formatFloat((lo + hi) / 2)));
    }
    const peak = Math.max(...counts);
    chart.appendChild(
      svg("text", { class: "axis faint", x: width - pad.right, y: labelY + 14, "text-anchor": "end" },
        (log ? "log scale · " : "") + "peak " + formatInt(peak)),
    );
    return chart;
  }

  // ---- the page -------------------------------------------------------------------------

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

  function staticTable(columns, rows) {
    const types = columns.map((name, i) => columnType(name, rows, i));
    const head = el("tr", null);
    const body = el("tbody", null);
    let order = rows.map((_, i) => i);
    let sorted = -1;
    let descending = false;
    const fill = () => {
      body.replaceChildren();
      for (const i of order) {
        const tr = el("tr", null);
        columns.forEach((_, c) => {
          const cell = rows[i][c];
          const td = el("td", { class: "t-" + types[c] + (cell === null || cell === undefined ? " null" : "") }, cellText(types[c], cell));
          if (types[c] === "bytes" && typeof cell === "number") td.setAttribute("title", formatInt(cell) + " bytes");
          tr.appendChild(td);
        });
        body.appendChild(tr);
      }
    };
    columns.forEach((name, c) => {
      const button = el("button", { type: "button", class: "th-button", title: "Sort by " + name }, name, el("span", { class: "arrow" }));
      button.addEventListener("click", () => {
        descending = sorted === c ? !descending : types[c] !== "text";
        sorted = c;
        const key = (i) => {
          const cell = rows[i][c];
          return cell === null || cell === undefined ? null : types[c] === "shape" ? numel(cell) : cell;
        };
        order = rows.map((_, i) => i).sort((a, b) => {
          const x = key(a);
          const y = key(b);
          if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
          return (x < y ? -1 : x > y ? 1 : a - b) * (descending && x !== y ? -1 : 1);
        });
        head.querySelectorAll(".arrow").forEach((arrow, k) => (arrow.textContent = k === c ? (descending ? "▼" : "▲") : ""));
        fill();
      });
      head.appendChild(el("th", { class: "t-" + types[c], scope: "col" }, button));
    });
    fill();
    return el("div", { class: "table-scroll" }, el("table", { class: "plain" }, el("thead", null, head), body));
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
      const total = items.reduce((sum, item) => sum + (typeof item.value === "number" && item.value > 0 ? item.value : 0), 0);
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
        holder.appendChild(el("p", { class: "muted small" }, formatInt(items.length - limit) + " more, " + format(rest) + " together"));
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
      const node = card(title, id, section.note ? el("p", { class: "note" }, String(section.note)) : null, staticTable(columns, rows));
      node.classList.add("wide");
      return node;
    }
    if (section.kind === "bars") return barsSection(section, id);
    return card(title, id, el("p", { class: "muted" }, "(a section of kind " + String(section.kind) + " this page does not know)"));
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
      ["elements", stats.numel], ["zeros", stats.zeros], ["NaN", stats.nan], ["+inf", stats.posinf], ["−inf", stats.neginf],
    ];
    for (const [name, value] of fields) {
      const bad = (name === "NaN" || name.endsWith("inf")) && typeof value === "number" && value > 0;
      grid.appendChild(el("div", { class: "stat" + (bad ? " bad" : "") }, el("dt", { text: name }), el("dd", { text: formatFloat(value) })));
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
      box.appendChild(el("div", { class: "hist-head" }, el("h4", { text: "Histogram" }), el("label", { class: "toggle" }, toggle, " log scale")));
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
        list.appendChild(el("dd", { title: formatInt(cell) + " bytes" }, humanBytes(cell), el("span", { class: "muted" }, " · " + formatInt(cell) + " B")));
      } else if (types[i] === "shape" && Array.isArray(cell)) {
        list.appendChild(el("dd", null, formatShape(cell), el("span", { class: "muted" }, " · " + formatInt(numel(cell)) + " elements")));
      } else if (types[i] === "status" && cell !== null && cell !== undefined) {
        list.appendChild(el("dd", null, el("span", { class: "pill s-" + String(cell).replace(/[^a-z-]/g, "") }, String(cell))));
      } else {
        list.appendChild(el("dd", { class: cell === null || cell === undefined ? "muted" : null }, cellText(types[i], cell)));
      }
    });
    return list;
  }

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
      onSelect: (index) => showDetail(index),
    });
    const placeholder = () =>
      detail.replaceChildren(el("div", { class: "detail-empty" }, el("p", null, "Select a tensor to see its fields" + (stats ? ", statistics and histogram." : "."))));
    function showDetail(index) {
      const row = rows[index];
      const name = String(row[table.nameIndex] ?? "");
      detail.replaceChildren(
        el("div", { class: "detail-head" },
          el("h3", { class: "mono", text: name, title: name }),
          el("button", { type: "button", class: "close", title: "Close", "aria-label": "Close", onclick: () => { table.select(-1); placeholder(); } }, "×")),
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
    const emptyDetail = () => detail.replaceChildren(el("div", { class: "detail-empty" }, el("p", null, "Select a row to see its differences.")));
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
        const parts = [el("div", { class: "detail-head" }, el("h3", { class: "mono", text: name, title: name })), detailFields(columns, types, rows[index])];
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
      el("button", { type: "button", class: "chip s-" + status, onclick: () => table.setColumnFilter("status", status === "all" ? null : status) },
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
        chartHolder.appendChild(el("p", { class: "muted" }, "Every tensor compared has " + metric + " 0: nothing to rank."));
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
          { width, log, format: formatFloat, exact: (v) => metric + " " + String(v), label: "worst tensors by " + metric },
        ),
      );
    };
    metricSelect.addEventListener("change", drawChart);
    const chartCard = el("div", { class: "compare-chart" }, el("div", { class: "chart-controls" }, el("h3", { text: "Largest differences" }), scaleNote, el("span", { class: "grow" }), metrics.length ? metricSelect : null), chartHolder);
    const node = card("Compared with " + String(compare.other ?? "another file"), id, el("div", { class: "compare-top" }, head, chips), chartCard, el("div", { class: "table-layout stacked" }, table.node, detail));
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
      subtitle.length ? el("p", { class: "subtitle", title: typeof file.bytes === "number" ? formatInt(file.bytes) + " bytes" : null }, subtitle.join(" · ")) : null,
    );
    const summary = el("dl", { class: "summary" });
    for (const pair of Array.isArray(data.summary) ? data.summary : []) {
      if (!Array.isArray(pair)) continue;
      summary.appendChild(el("div", { class: "tile" }, el("dt", { text: String(pair[0] ?? "") }), el("dd", { text: String(pair[1] ?? "—"), title: String(pair[1] ?? "") })));
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
    app.appendChild(el("footer", { class: "muted small" }, "Made by " + String(data.generator ?? "tensorfile") + ". This page is self-contained: it loads nothing."));
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
      charts: () => document.querySelectorAll("svg.chart").length,
    });
  }

  main();
})();
