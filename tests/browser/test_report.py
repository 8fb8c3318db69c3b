"""The HTML report in a real browser: headless Chromium (Debian's `chromium` and
`chromium-driver`) driven by Selenium. Run by `scripts/browser-test`.

Pages come from `tensorfile report` (the binary $TENSORFILE_BIN, default target/debug/tensorfile)
on a fixture of every format the library reads, a comparison, a sharded checkpoint, a file of
50,000 tensors and one of hostile names (both written here as safetensors); and from
`make_report(path)`: report data as JSON (tests/fixtures/report/*.json, with every kind of
section) made into a page by the example `report_page`. Pages made elsewhere can be checked
too: put them (`.html`) in a folder named by $TENSORFILE_REPORT_PAGES. $TENSORFILE_SCREENSHOTS
names a folder for PNGs of the pages.
"""

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "report"
CHROMIUM = Path(os.environ.get("TENSORFILE_CHROMIUM", "/usr/bin/chromium"))
CHROMEDRIVER = Path(os.environ.get("TENSORFILE_CHROMEDRIVER", "/usr/bin/chromedriver"))
HOSTILE = '</script><script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
WIDTH = 1400

if not CHROMIUM.exists() or not CHROMEDRIVER.exists():
    pytest.skip(f"no {CHROMIUM} or {CHROMEDRIVER}: apt-get install chromium chromium-driver", allow_module_level=True)


# ---- making pages -------------------------------------------------------------------------


def make_report(path: Path, out_dir: Path) -> Path:
    """The report page for `path`: report data as JSON, made into a page by the example
    `report_page` (the one place to change to make pages with `tensorfile report` instead)."""
    page = out_dir / (path.stem + ".html")
    command = ["cargo", "run", "--quiet", "--locked", "-p", "tensorfile", "--example", "report_page", "--",
               str(path), str(page)]
    subprocess.run(command, cwd=ROOT, check=True)
    return page


TENSORFILE = Path(os.environ.get("TENSORFILE_BIN", ROOT / "target" / "debug" / "tensorfile"))

# A file of every format the library reads, made by its real producer (tests/fixtures/README.md).
FORMAT_FIXTURES = {
    "zt": "zt/python/dtypes.zt",
    "zt1": "zt1/zstd.zt",
    "zt2": "zt2/attributes.zt",
    "safetensors": "safetensors/dtypes.safetensors",
    "pte": "executorch/mobilenet_v2_xnnpack.pte",
    "pte-portable": "executorch/mobilenet_v2.pte",
    "ptd": "executorch/external.ptd",
    "pt": "pytorch/state_dict.pt",
    "pt2": "pytorch/mobilenet_v2.pt2",
    "gguf": "gguf/blocks.gguf",
    "npy": "numpy/be_float32.npy",
    "npz": "numpy/savez.npz",
    "onnx": "onnx/torch_mlp.onnx",
    "hdf5": "hdf5/datasets/dtypes_latest.h5",
    "sharded": "sharded/mobilenet",
}


def tensorfile_report(path: Path, page: Path, *options) -> Path:
    """The page `tensorfile report` writes for `path`."""
    # Paths inside the repository as relative ones: the pages (and screenshots) name no folder
    # of this machine.
    rel = lambda p: os.path.relpath(p, ROOT) if Path(p).resolve().is_relative_to(ROOT) else str(p)
    subprocess.run([str(TENSORFILE), "report", rel(path), "-o", str(page), *map(rel, options)], check=True,
                   stdout=subprocess.DEVNULL, cwd=ROOT)
    return page


def listed(path: Path) -> list:
    """`tensorfile ls --json` of `path`: its readable entries (the rows a report's table holds)."""
    out = subprocess.run([str(TENSORFILE), "ls", "--json", str(path)], check=True, capture_output=True).stdout
    return [row for row in json.loads(out) if row["kind"] != "unreadable"]


def write_safetensors(path: Path, names: list):
    """A safetensors file of one float32 value per name, the value its index."""
    header, offset = {}, 0
    for name in names:
        header[name] = {"dtype": "F32", "shape": [1], "data_offsets": [offset, offset + 4]}
        offset += 4
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    data = b"".join(struct.pack("<f", i) for i in range(len(names)))
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)


def synthetic_data(count: int, name_of=lambda i: f"model.layers.{i // 10}.block.{i % 10}.weight") -> dict:
    """Report data for `count` tensors (no statistics), as the library would gather it."""
    dtypes = ["bfloat16", "float32", "float16", "int8"]
    rows = []
    offset = 0
    for i in range(count):
        shape = [1 + (i * 7919) % 4096, 1 + (i * 104729) % 512]
        size = shape[0] * shape[1] * (1 + i % 4)
        rows.append([name_of(i), dtypes[i % 4], shape, size, "tensor", "dense", offset])
        offset += size
    by_dtype = {}
    for row in rows:
        by_dtype[row[1]] = by_dtype.get(row[1], 0) + row[3]
    return {
        "report_version": 1,
        "generator": "tensorfile (browser test)",
        "title": f"synthetic-{count}.safetensors",
        "file": {"name": f"synthetic-{count}.safetensors", "format": "safetensors", "format_title": "safetensors",
                 "bytes": offset},
        "summary": [["format", "safetensors"], ["tensors", str(count)]],
        "sections": [{"kind": "bars", "title": "Where the bytes go: by dtype", "unit": "bytes",
                      "items": [{"label": k, "value": v} for k, v in sorted(by_dtype.items(), key=lambda kv: -kv[1])]}],
        "tensors": {"columns": ["name", "dtype", "shape", "bytes", "kind", "layout", "offset"], "rows": rows},
        "unreadable": [],
        "compare": None,
    }


def hostile_data() -> dict:
    """Names, titles and labels that would run script if a page put them in as markup."""
    names = [HOSTILE, "<svg onload=window.__pwned=3>", "\u2028</SCRIPT >\u2029", "&lt;b&gt;", "a\"b'c"]
    data = synthetic_data(len(names), name_of=lambda i: names[i])
    data["title"] = HOSTILE
    data["summary"].append([HOSTILE, HOSTILE])
    data["sections"] += [
        {"kind": "pairs", "title": HOSTILE, "rows": [[HOSTILE, HOSTILE]]},
        {"kind": "table", "title": HOSTILE, "note": HOSTILE, "columns": [HOSTILE, "bytes"], "rows": [[HOSTILE, 1]]},
        {"kind": "bars", "title": HOSTILE, "unit": "count",
         "items": [{"label": HOSTILE, "value": 2, "children": [{"label": HOSTILE, "value": 2}]}]},
    ]
    data["unreadable"] = [[HOSTILE, HOSTILE]]
    data["tensors"]["stats"] = [{"error": HOSTILE}] * len(names)
    data["compare"] = {"other": HOSTILE, "atol": 0, "rtol": 0, "columns": ["name", "status"],
                       "rows": [[HOSTILE, HOSTILE], [names[1], "changed"]]}
    return data


@pytest.fixture(scope="session")
def pages(tmp_path_factory):
    """name -> (page, data): the fixtures' pages and the generated ones."""
    out = tmp_path_factory.mktemp("pages")
    made = {}
    for path in sorted(FIXTURES.glob("*.json")):
        made[path.stem] = (make_report(path, out), json.loads(path.read_text()))
    large = synthetic_data(50_000)
    large["sections"].append({"kind": "table", "title": "Every tensor", "columns": ["name", "bytes"],
                              "rows": [[row[0], row[3]] for row in large["tensors"]["rows"]]})
    for name, data in [("large", large), ("hostile", hostile_data()), ("empty", synthetic_data(0))]:
        path = out / f"{name}.json"
        path.write_text(json.dumps(data))
        made[name] = (make_report(path, out), data)
    return made


@pytest.fixture(scope="session")
def cli_pages(tmp_path_factory):
    """name -> (page, the file's listed entries): `tensorfile report` of every format's fixture,
    of a comparison, of 50,000 tensors and of hostile names."""
    if not TENSORFILE.exists():
        pytest.skip(f"no {TENSORFILE}: cargo build, or set TENSORFILE_BIN")
    out = tmp_path_factory.mktemp("cli-pages")
    fixtures = ROOT / "tests" / "fixtures"
    made = {}
    for name, rel in FORMAT_FIXTURES.items():
        made[name] = (tensorfile_report(fixtures / rel, out / f"{name}.html"), listed(fixtures / rel))
    a, b = fixtures / "diff" / "quant.a.gguf", fixtures / "diff" / "quant.b.safetensors"
    made["compare"] = (tensorfile_report(a, out / "compare.html", "--compare", b), listed(a))
    large = out / "large.safetensors"
    write_safetensors(large, [f"model.layers.{i // 10}.block.{i % 10}.weight" for i in range(50_000)])
    made["large"] = (tensorfile_report(large, out / "large-cli.html"), listed(large))
    hostile = out / "hostile.safetensors"
    write_safetensors(hostile, [HOSTILE, "<svg onload=window.__pwned=3>", "\u2028</SCRIPT >\u2029", "&lt;b&gt;"])
    made["hostile"] = (tensorfile_report(hostile, out / "hostile-cli.html"), listed(hostile))
    return made


@pytest.mark.parametrize("name", [*FORMAT_FIXTURES, "compare"])
def test_reports_of_every_format(driver, cli_pages, name):
    """The page of each format's file: no console error, every tensor in the table (the
    count, and each name found by the filter), the charts drawn, a tensor's histogram."""
    page, entries = cli_pages[name]
    data = check_page(driver, page)
    assert report(driver, "rows()") == len(entries)
    names = sorted(report(driver, "visibleColumn('name')"))
    assert names == sorted(e["name"] for e in entries)
    charts = [s for s in data["sections"] if s["kind"] == "bars" and s["items"]]
    assert charts, "every file has bytes to chart"
    if entries:
        target = entries[-1]["name"]
        tensor_search(driver).send_keys(target)
        WebDriverWait(driver, 10).until(lambda d: target in report(d, "visibleColumn('name')"))
        assert report(driver, "visible()") <= len(entries)
        # A tensor with a histogram, found by its name and clicked, shows its bars.
        rows, stats = data["tensors"]["rows"], data["tensors"]["stats"]
        with_hist = [i for i, st in enumerate(stats) if st.get("hist")]
        if with_hist:
            want = rows[with_hist[0]][0]
            search = tensor_search(driver)
            search.send_keys(Keys.CONTROL, "a")
            search.send_keys(want)
            WebDriverWait(driver, 10).until(lambda d: want in report(d, "visibleColumn('name')"))
            row = next(r for r in driver.find_elements(By.CSS_SELECTOR, "#tensors .vt-row")
                       if r.find_element(By.CSS_SELECTOR, ".vt-cell").text == want)
            row.click()
            bars = driver.find_elements(By.CSS_SELECTOR, "#tensors .detail svg.histogram rect.hbar")
            assert len(bars) == len(stats[with_hist[0]]["hist"]["counts"])
    if name == "compare":
        assert report(driver, "compareRows()") == len(data["compare"]["rows"])
        assert driver.find_elements(By.CSS_SELECTOR, "#compare svg.chart g.bar")
    if name in ("pte", "pt2", "gguf", "compare"):
        screenshot(driver, f"format-{name}")
    assert severe_logs(driver) == []


def test_cli_report_of_fifty_thousand_tensors(driver, cli_pages):
    page, entries = cli_pages["large"]
    open_page(driver, page)
    assert severe_logs(driver) == []
    assert report(driver, "rows()") == 50_000 == len(entries)
    assert 0 < report(driver, "renderedRows()") < 100
    tensor_search(driver).send_keys("model.layers.4321.*")
    wait_visible(driver, 10)
    assert sorted(report(driver, "visibleColumn('name')")) == sorted(f"model.layers.4321.block.{i}.weight" for i in range(10))


def test_cli_report_of_hostile_names_runs_nothing(driver, cli_pages):
    page, entries = cli_pages["hostile"]
    open_page(driver, page)
    assert driver.execute_script("return window.__pwned") is None
    assert sorted(report(driver, "visibleColumn('name')")) == sorted(e["name"] for e in entries)
    assert driver.find_elements(By.CSS_SELECTOR, "#tensors img, svg[onload]") == []


def outside_pages() -> list[Path]:
    folder = os.environ.get("TENSORFILE_REPORT_PAGES")
    return sorted(Path(folder).glob("*.html")) if folder else []


# ---- the browser --------------------------------------------------------------------------


@pytest.fixture(scope="session")
def driver():
    profile = tempfile.mkdtemp(prefix="tensorfile-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", f"--window-size={WIDTH},1000"]:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    browser = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    browser.set_window_size(WIDTH, 1000)
    yield browser
    browser.quit()
    shutil.rmtree(profile, ignore_errors=True)


def open_page(driver, page: Path):
    driver.set_window_size(WIDTH, 1000)
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return !!window.tensorfileReport"))
    return driver


def severe_logs(driver) -> list[dict]:
    return [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def report(driver, call: str, *args):
    return driver.execute_script(f"return window.tensorfileReport.{call};", *args)


def screenshot(driver, name: str, dark: bool = False):
    """A PNG of the whole page, 1400 pixels wide, into $TENSORFILE_SCREENSHOTS (`dark`: with
    the system's dark colour scheme)."""
    folder = os.environ.get("TENSORFILE_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    if dark:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia",
                               {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
    height = driver.execute_script("window.scrollTo(0, 0); return document.documentElement.scrollHeight")
    shot = driver.execute_cdp_cmd("Page.captureScreenshot", {
        "format": "png", "captureBeyondViewport": True,
        "clip": {"x": 0, "y": 0, "width": WIDTH, "height": min(height, 8000), "scale": 1}})
    (Path(folder) / f"{name}.png").write_bytes(base64.b64decode(shot["data"]))
    if dark:
        driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})


def tensor_search(driver):
    return driver.find_element(By.CSS_SELECTOR, "#tensors input.search")


def wait_visible(driver, count: int):
    WebDriverWait(driver, 30).until(lambda d: report(d, "visible()") == count)


def count_text(driver) -> str:
    return driver.find_element(By.CSS_SELECTOR, "#tensors .count").text


# ---- checks every page passes -------------------------------------------------------------


def check_page(driver, page: Path):
    open_page(driver, page)
    assert severe_logs(driver) == []
    data = driver.execute_script("return JSON.parse(document.getElementById('report-data').textContent)")
    rows = len(data["tensors"]["rows"])
    assert report(driver, "rows()") == rows
    assert report(driver, "visible()") == rows
    assert count_text(driver) == f"{rows:,} of {rows:,} tensors"
    if rows:
        assert report(driver, "renderedRows()") > 0
    # Each bar section drew its bars.
    for i, section in enumerate(data.get("sections", []), start=1):
        if section.get("kind") == "bars" and section.get("items"):
            drawn = driver.find_elements(By.CSS_SELECTOR, f"#section-{i} svg rect.fill")
            assert len(drawn) == min(len(section["items"]), 40), section["title"]
    # Nothing was fetched.
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0
    return data


def test_fixture_pages(driver, pages):
    for name, (page, _) in pages.items():
        if name not in ("large", "hostile"):  # checked by their own tests
            data = check_page(driver, page)
            if data["tensors"]["rows"]:
                # The pictures show a tensor's details: the first one's.
                driver.find_element(By.CSS_SELECTOR, "#tensors .vt-row").click()
            screenshot(driver, name)
            screenshot(driver, name + "-dark", dark=True)


@pytest.mark.parametrize("page", outside_pages(), ids=lambda p: p.name)
def test_outside_pages(driver, page):
    check_page(driver, page)
    screenshot(driver, page.stem)


# ---- the small page: every part --------------------------------------------------------


@pytest.fixture
def small(driver, pages):
    page, data = pages["small"]
    open_page(driver, page)
    return data


def test_filter_by_name_and_glob(driver, small):
    names = [row[0] for row in small["tensors"]["rows"]]
    search = tensor_search(driver)
    search.send_keys("model.norm.weight")
    wait_visible(driver, 1)
    assert report(driver, "visibleColumn('name')") == ["model.norm.weight"]
    assert count_text(driver) == f"1 of {len(names)} tensors"
    search.clear()
    search.send_keys("*.self_attn.q_proj.weight")
    expected = [n for n in names if n.endswith(".self_attn.q_proj.weight")]
    wait_visible(driver, len(expected))
    assert sorted(report(driver, "visibleColumn('name')")) == sorted(expected)
    search.clear()
    search.send_keys("no such tensor")
    wait_visible(driver, 0)
    assert driver.find_element(By.CSS_SELECTOR, "#tensors .vt-empty").is_displayed()


def test_filter_by_dtype(driver, small):
    select = Select(driver.find_element(By.CSS_SELECTOR, '#tensors select[data-column="dtype"]'))
    select.select_by_value("=float32")
    expected = sum(1 for row in small["tensors"]["rows"] if row[1] == "float32")
    wait_visible(driver, expected)
    assert set(report(driver, "visibleColumn('dtype')")) == {"float32"}


def header(driver, scope: str, column: str):
    for cell in driver.find_elements(By.CSS_SELECTOR, f"#{scope} .vt-hcell"):
        if cell.find_element(By.CSS_SELECTOR, ".vt-hname").text == column:
            return cell
    raise AssertionError(f"no column {column} in #{scope}")


def test_sort_by_bytes_and_shape(driver, small):
    header(driver, "tensors", "bytes").click()
    values = report(driver, "visibleColumn('bytes')")
    assert values == sorted(values, reverse=True)
    header(driver, "tensors", "bytes").click()
    values = report(driver, "visibleColumn('bytes')")
    assert values == sorted(values)
    # The rows drawn follow the order: the first row shown is the smallest tensor.
    first = driver.find_element(By.CSS_SELECTOR, "#tensors .vt-row .vt-cell")
    assert first.text == report(driver, "visibleColumn('name', 1)")[0]
    header(driver, "tensors", "shape").click()
    numels = [eval_numel(shape) for shape in report(driver, "visibleColumn('shape')")]
    assert numels == sorted(numels, reverse=True)
    header(driver, "tensors", "name").click()
    names = report(driver, "visibleColumn('name')")
    assert names == sorted(names)


def eval_numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def test_row_opens_statistics_and_histogram(driver, small):
    tensor_search(driver).send_keys("model.embed_tokens.weight")
    wait_visible(driver, 1)
    driver.find_element(By.CSS_SELECTOR, "#tensors .vt-row").click()
    detail = driver.find_element(By.CSS_SELECTOR, "#tensors .detail")
    assert detail.find_element(By.CSS_SELECTOR, "h3").text == "model.embed_tokens.weight"
    bars = detail.find_elements(By.CSS_SELECTOR, "svg.histogram rect.hbar")
    index = [row[0] for row in small["tensors"]["rows"]].index("model.embed_tokens.weight")
    assert len(bars) == len(small["tensors"]["stats"][index]["hist"]["counts"])
    heights = [float(bar.get_attribute("height")) for bar in bars]
    detail.find_element(By.CSS_SELECTOR, "input.logtoggle").click()
    logged = [float(bar.get_attribute("height")) for bar in detail.find_elements(By.CSS_SELECTOR, "svg.histogram rect.hbar")]
    assert logged != heights and max(logged) == pytest.approx(max(heights))
    # The bytes printed humanly, exact in the tooltip.
    size = small["tensors"]["rows"][index][3]
    assert detail.find_element(By.CSS_SELECTOR, f'dd[title="{size:,} bytes"]').text.startswith("31.3 MiB")
    assert severe_logs(driver) == []
    detail.find_element(By.CSS_SELECTOR, "button.close").click()
    assert report(driver, "selected()") == -1
    assert detail.find_elements(By.CSS_SELECTOR, ".detail-empty")
    assert driver.find_elements(By.CSS_SELECTOR, "#tensors .vt-row.selected") == []
    assert severe_logs(driver) == []


def test_keyboard_moves_the_selection(driver, small):
    driver.find_element(By.CSS_SELECTOR, "#tensors .vt-row").click()
    viewport = driver.find_element(By.CSS_SELECTOR, "#tensors .vt-viewport")
    viewport.send_keys(Keys.ARROW_DOWN)
    viewport.send_keys(Keys.ARROW_DOWN)
    assert report(driver, "selected()") == 2


def test_tensor_without_statistics_says_why(driver, small):
    tensor_search(driver).send_keys("model.position_ids")
    wait_visible(driver, 1)
    driver.find_element(By.CSS_SELECTOR, "#tensors .vt-row").click()
    text = driver.find_element(By.CSS_SELECTOR, "#tensors .detail .stats").text
    assert "integer tensor" in text


def test_bars_drill_down_and_back(driver, small):
    section = driver.find_element(By.ID, "section-1")
    items = small["sections"][0]["items"]
    at, first = next((i, item) for i, item in enumerate(items) if item.get("children"))
    section.find_elements(By.CSS_SELECTOR, "g.bar")[at].click()
    assert len(section.find_elements(By.CSS_SELECTOR, "rect.fill")) == len(first["children"])
    crumbs = [c.text for c in section.find_elements(By.CSS_SELECTOR, ".crumbs .crumb")]
    assert crumbs == ["all", first["label"]]
    section.find_element(By.CSS_SELECTOR, "button.crumb").click()
    assert len(section.find_elements(By.CSS_SELECTOR, "rect.fill")) == len(small["sections"][0]["items"])


def test_sections_and_unreadable(driver, small):
    for i, section in enumerate(small["sections"], start=1):
        node = driver.find_element(By.ID, f"section-{i}")
        assert node.find_element(By.CSS_SELECTOR, "h2").text == section["title"]
        if section["kind"] == "table":
            assert len(node.find_elements(By.CSS_SELECTOR, "tbody tr")) == len(section["rows"])
        if section["kind"] == "pairs":
            assert len(node.find_elements(By.CSS_SELECTOR, "dt")) == len(section["rows"])
    # A table section sorts by a column: numbers from the largest, nulls last.
    at, operators = next((i, s) for i, s in enumerate(small["sections"], start=1) if s["kind"] == "table")
    column = operators["columns"].index("bytes")
    node = driver.find_element(By.ID, f"section-{at}")
    node.find_elements(By.CSS_SELECTOR, "th button")[column].click()
    shown = [row.find_elements(By.CSS_SELECTOR, "td")[column] for row in node.find_elements(By.CSS_SELECTOR, "tbody tr")]
    numbers = sorted((row[column] for row in operators["rows"] if row[column] is not None), reverse=True)
    assert [cell.get_attribute("title") or None for cell in shown] == [f"{n:,} bytes" for n in numbers] + [None]
    unreadable = driver.find_element(By.ID, "unreadable")
    assert len(unreadable.find_elements(By.CSS_SELECTOR, "tbody tr")) == len(small["unreadable"])


def test_compare_view(driver, small):
    rows = small["compare"]["rows"]
    assert report(driver, "compareRows()") == len(rows)
    compare = driver.find_element(By.ID, "compare")
    compare.find_element(By.CSS_SELECTOR, "button.chip.s-changed").click()
    changed = [row for row in rows if row[1] == "changed"]
    assert report(driver, "compareVisible()") == len(changed)
    assert set(report(driver, "compareColumn('status')")) == {"changed"}
    # The chart ranks the worst by NMSE.
    drawn = compare.find_elements(By.CSS_SELECTOR, "svg.chart g.bar")
    worst = sorted((row for row in rows if isinstance(row[7], (int, float)) and row[7] > 0), key=lambda r: -r[7])
    assert len(drawn) == min(15, len(worst))
    assert drawn[0].find_element(By.CSS_SELECTOR, "title").get_attribute("textContent").startswith(worst[0][0])
    header(driver, "compare", "max_abs").click()
    values = [v for v in report(driver, "compareColumn('max_abs')") if v is not None]
    assert values == sorted(values, reverse=True)
    compare.find_element(By.CSS_SELECTOR, ".vt-row").click()
    assert compare.find_element(By.CSS_SELECTOR, ".detail h3").text
    # A bar of the chart selects its row, and the row leads to the tensor in the tensor table.
    compare.find_elements(By.CSS_SELECTOR, "svg.chart g.bar")[0].click()
    assert rows[report(driver, "compareSelected()")][0] == worst[0][0]
    compare.find_element(By.CSS_SELECTOR, ".detail button.link").click()
    names = [row[0] for row in small["tensors"]["rows"]]
    assert report(driver, "selected()") == names.index(worst[0][0])
    assert driver.find_element(By.CSS_SELECTOR, "#tensors .detail h3").text == worst[0][0]
    assert severe_logs(driver) == []


# ---- 50,000 tensors ------------------------------------------------------------------------


def test_fifty_thousand_rows(driver, pages):
    page, _ = pages["large"]
    open_page(driver, page)
    assert severe_logs(driver) == []
    # A table section of 50,000 rows draws its first 2,000 and says so.
    rows = driver.find_elements(By.CSS_SELECTOR, "#section-2 tbody tr")
    assert len(rows) == 2000
    assert driver.find_element(By.CSS_SELECTOR, "#section-2 p.small").text == "The first 2,000 of 50,000 rows."
    assert report(driver, "rows()") == 50_000
    assert count_text(driver) == "50,000 of 50,000 tensors"
    # Only the rows in view are in the document.
    assert 0 < report(driver, "renderedRows()") < 100
    tensor_search(driver).send_keys("model.layers.4321.*")
    wait_visible(driver, 10)
    assert all(name.startswith("model.layers.4321.") for name in report(driver, "visibleColumn('name')"))
    tensor_search(driver).send_keys(Keys.CONTROL, "a")
    tensor_search(driver).send_keys(Keys.BACKSPACE)
    wait_visible(driver, 50_000)
    header(driver, "tensors", "bytes").click()
    values = report(driver, "visibleColumn('bytes')")
    assert values == sorted(values, reverse=True)
    # Scrolled to the end, the last rows are drawn.
    driver.execute_script("const v = document.querySelector('#tensors .vt-viewport'); v.scrollTop = v.scrollHeight;")
    last = report(driver, "visibleColumn('name')")[-1]
    WebDriverWait(driver, 10).until(
        lambda d: last in [c.text for c in d.find_elements(By.CSS_SELECTOR, "#tensors .vt-row .vt-cell:first-child")])
    assert report(driver, "renderedRows()") < 100
    assert severe_logs(driver) == []
    screenshot(driver, "large")


# ---- hostile names -------------------------------------------------------------------------


def test_hostile_names_stay_text(driver, pages):
    page, data = pages["hostile"]
    open_page(driver, page)
    # Let any injected handler (an image's onerror, an svg's onload) fire first.
    time.sleep(0.5)
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert severe_logs(driver) == []
    assert driver.find_elements(By.CSS_SELECTOR, "#app img, #app script, #app iframe") == []
    assert driver.find_element(By.CSS_SELECTOR, "h1").text == HOSTILE
    assert report(driver, "visibleColumn('name')") == [row[0] for row in data["tensors"]["rows"]]
    driver.find_element(By.CSS_SELECTOR, "#tensors .vt-row").click()
    assert driver.find_element(By.CSS_SELECTOR, "#tensors .detail h3").text == HOSTILE
    driver.find_element(By.CSS_SELECTOR, "g.bar.clickable").click()
    assert driver.execute_script("return typeof window.__pwned") == "undefined"
    assert severe_logs(driver) == []
    screenshot(driver, "hostile")
