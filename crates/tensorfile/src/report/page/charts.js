// The report page, part 3: charts drawn in SVG.

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
    const track = { class: "track", x: labelWidth, y: 2, width: barSpace, height: rowHeight - 6, rx: 3 };
    group.appendChild(svg("rect", track));
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
    const labelAt = { class: "label", x: labelWidth - 10, y: rowHeight / 2 + 1, "text-anchor": "end" };
    group.appendChild(svg("text", labelAt, label));
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
    const middle = { x: width / 2, y: height / 2, "text-anchor": "middle", class: "axis" };
    chart.appendChild(svg("text", middle, "no histogram"));
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
  const axis = { class: "axisline", x1: pad.left, x2: width - pad.right, y1: baseline, y2: baseline };
  chart.appendChild(svg("line", axis));
  if (stats && typeof stats.mean === "number" && stats.mean >= lo && stats.mean <= hi && hi > lo) {
    const mx = x(stats.mean);
    const mean = svg("line", { class: "meanline", x1: mx, x2: mx, y1: pad.top - 4, y2: baseline });
    svgTitle(mean, "mean " + formatFloat(stats.mean));
    chart.appendChild(mean);
  }
  const labelY = baseline + 16;
  chart.appendChild(svg("text", { class: "axis", x: pad.left, y: labelY, "text-anchor": "start" }, formatFloat(lo)));
  const right = { class: "axis", x: width - pad.right, y: labelY, "text-anchor": "end" };
  chart.appendChild(svg("text", right, formatFloat(hi)));
  if (hi > lo) {
    const middle = { class: "axis", x: width / 2, y: labelY, "text-anchor": "middle" };
    chart.appendChild(svg("text", middle, formatFloat((lo + hi) / 2)));
  }
  const peak = Math.max(...counts);
  chart.appendChild(
    svg("text", { class: "axis faint", x: width - pad.right, y: labelY + 14, "text-anchor": "end" },
      (log ? "log scale · " : "") + "peak " + formatInt(peak)),
  );
  return chart;
}
