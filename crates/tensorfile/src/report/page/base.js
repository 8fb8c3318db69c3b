// The report page, part 1: constants, DOM helpers, numbers and cells.

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

// ---- the data -------------------------------------------------------------------------

function readData() {
  const node = document.getElementById("report-data");
  return JSON.parse(node ? node.textContent : "null");
}

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

/** A comparison's status as a coloured pill (its class from the status's letters only). */
function statusPill(status) {
  return el("span", { class: "pill s-" + String(status).replace(/[^a-z-]/g, "") }, String(status));
}

/** A value as a length: a positive number, else 0. */
function positive(value) {
  return typeof value === "number" && value > 0 ? value : 0;
}

/** A share of a total in percent, one decimal. */
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
