// The report page, part 2: tables (the virtual one for tensors, and plain ones).

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
   * options: columns, rows, noun ("tensors"), selects (the columns that get a select when they
   * hold 2 to 60 values), alwaysSelect (a column whose select is always there), onSelect(index)
   * (a row clicked; -1 when the selection is cleared), label (the grid's accessible name).
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

    // Each column's least width in pixels and its share of the rest.
    const widths = this.columns.map((name, i) => {
      if (i === this.nameIndex) return [200, 4];
      if (this.types[i] === "shape") return [110, 1.5];
      if (this.types[i] === "text") return [80, 1.1];
      if (this.types[i] === "status") return [100, 1];
      if (this.types[i] === "cosine") return [112, 1.2];
      return [84, 1];
    });
    this.template = widths.map(([least, share]) => "minmax(" + least + "px, " + share + "fr)").join(" ");
    // Rows are as wide as the viewport, and never narrower than the columns' least widths.
    const minimum = widths.reduce((sum, [least]) => sum + least, 0);

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
    this.selects = new Map();
    for (const name of options.selects || []) {
      const index = this.columns.indexOf(name);
      if (index < 0) continue;
      const select = this.makeSelect(name, index, options.alwaysSelect === name);
      if (!select) continue;
      this.selects.set(index, select);
      controls.appendChild(select);
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
    // A short table is as tall as its rows (and a header, and a scroll bar); a long one scrolls.
    this.viewport.style.height = Math.min(560, 36 + 16 + Math.max(3, this.rows.length) * ROW_HEIGHT) + "px";
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
    const select = this.selects.get(index);
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
    const current = this.spacer.children;
    if (nodes.length === current.length && nodes.every((node, i) => node === current[i])) return;
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
      const missing = cell === null || cell === undefined;
      const td = el("div", { class: "vt-cell t-" + type + (missing ? " null" : ""), role: "gridcell" });
      if (type === "status" && cell !== null && cell !== undefined) {
        td.appendChild(statusPill(cell));
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
      for (const select of this.selects.values()) select.value = "";
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

/** Rows a plain table draws at most (the first, in its order); the rest are counted below it. */
const PLAIN_ROWS = 2000;

/** A plain table (a section's, the unreadable list) sortable by a click on a column's name. */
function staticTable(columns, rows) {
  const types = columns.map((name, i) => columnType(name, rows, i));
  const head = el("tr", null);
  const body = el("tbody", null);
  let order = rows.map((_, i) => i);
  let sorted = -1;
  let descending = false;
  const more = el("p", { class: "muted small", hidden: rows.length <= PLAIN_ROWS ? "" : null });
  more.textContent = "The first " + formatInt(PLAIN_ROWS) + " of " + formatInt(rows.length) + " rows.";
  const fill = () => {
    body.replaceChildren();
    for (const i of order.slice(0, PLAIN_ROWS)) {
      const tr = el("tr", null);
      columns.forEach((_, c) => {
        const cell = rows[i][c];
        const missing = cell === null || cell === undefined;
        const td = el("td", { class: "t-" + types[c] + (missing ? " null" : "") }, cellText(types[c], cell));
        if (types[c] === "bytes" && typeof cell === "number") td.setAttribute("title", formatInt(cell) + " bytes");
        tr.appendChild(td);
      });
      body.appendChild(tr);
    }
  };
  columns.forEach((name, c) => {
    const arrow = el("span", { class: "arrow" });
    const button = el("button", { type: "button", class: "th-button", title: "Sort by " + name }, name, arrow);
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
      head.querySelectorAll(".arrow").forEach((mark, k) => {
        mark.textContent = k === c ? (descending ? "▼" : "▲") : "";
      });
      fill();
    });
    head.appendChild(el("th", { class: "t-" + types[c], scope: "col" }, button));
  });
  fill();
  const table = el("div", { class: "table-scroll" }, el("table", { class: "plain" }, el("thead", null, head), body));
  return el("div", null, table, more);
}
