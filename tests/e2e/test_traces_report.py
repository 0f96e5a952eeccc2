"""`agentkern traces report`: one self-contained HTML file, checked as text and rendered in headless Chromium
(its DOM and a screenshot's pixels). `make test` installs Chromium; without it the browser tests skip and say why."""

import html
import re
import shutil
import subprocess

import pytest
from png_pixels import read_rgb
from traces_runs import agentkern, builtin_run, scripted_run

from agentkern.traces import charts

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="HEADLESS CHROMIUM IS NOT INSTALLED, so the report is not rendered: `apt-get install -y chromium` "
    "(`make test` installs it)",
)
WINDOW = (1200, 2000)


@pytest.fixture(scope="module")
def scripted(tmp_path_factory):
    return scripted_run(tmp_path_factory)


@pytest.fixture(scope="module")
def report(scripted, tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "run.html"
    proc = agentkern("traces", "report", scripted.run_id, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    return out


def chromium(profile, *args) -> subprocess.CompletedProcess:
    """Headless Chromium as CI runs it; every name resolves to nothing, so a report that needed the network
    would render without its parts."""
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            f"--user-data-dir={profile}",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )


def svg(document: str, chart_id: str) -> str:
    found = re.search(rf'<svg id="{chart_id}".*?</svg>', document, re.S)
    assert found, f"no chart {chart_id}"
    return found.group(0)


def section_text(document: str, section_id: str) -> str:
    found = re.search(rf'<section id="{section_id}".*?</section>', document, re.S)
    assert found, f"no section {section_id}"
    return html.unescape(re.sub(r"<[^>]+>", "", found.group(0)))


def test_the_report_is_one_file_that_needs_nothing_from_the_network(report, scripted):
    text = report.read_text()
    assert "<script" not in text and "<link" not in text and "@import" not in text
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text) and "url(" not in text
    for chart in ("chart-best", "chart-population", "chart-verdicts", "chart-tokens", "chart-cost"):
        assert f'<svg id="{chart}"' in text
    assert scripted.run_id in text and "relu-omp/static/0" in text
    best_code = section_text(text, "best-kernel")  # the best kernel, highlighted (line numbers in their own cell)
    assert all(line.strip() in best_code for line in scripted.best_source().splitlines())
    assert 'class="highlight"' in text and ".highlight .k" in text  # pygments spans and their stylesheet


def test_a_builtin_run_report_says_there_were_no_model_calls(tmp_path_factory, tmp_path):
    run = builtin_run(tmp_path_factory)
    out = tmp_path / "builtin.html"
    assert agentkern("traces", "report", run.run_id, "--out", str(out)).returncode == 0
    text = out.read_text()
    assert 'id="no-model-calls"' in text and "chart-tokens" not in text
    assert svg(text, "chart-best").count("<circle") == 3  # one point per iteration


def test_chart_geometry_puts_faster_higher_and_ticks_on_round_numbers():
    assert charts.nice_ticks(0.0, 1.3) == [0.0, 0.5, 1.0, 1.5] and charts.nice_ticks(0.0, 7.0) == [0, 2, 4, 6, 8]
    chart = charts.best_so_far([(1, None), (2, 0.8), (3, 1.5)])
    assert len(chart.marks) == 2 and chart.marks[1]["cy"] < chart.marks[0]["cy"]  # SVG y grows downwards
    assert chart.path.startswith("M") and chart.path.count("L") == 1


@needs_chromium
def test_the_report_renders_in_headless_chromium(report, tmp_path):
    dom = chromium(tmp_path / "profile-dom", "--dump-dom", report.as_uri())
    assert dom.returncode == 0 and "</html>" in dom.stdout, dom.stderr[-2000:]
    document = dom.stdout
    assert svg(document, "chart-best").count('<circle class="point"') == 2  # best after iterations 1 and 2
    assert svg(document, "chart-best").count("<path") == 1
    assert svg(document, "chart-population").count('<circle class="cand"') == 6  # every candidate
    assert svg(document, "chart-verdicts").count('<rect class="bar"') == 4  # ok, compile_error, no_code, incorrect
    assert svg(document, "chart-tokens").count('<rect class="bar"') == 2  # planner, coder
    assert "y[i] = x[i] > 0.f ? x[i] : 0.f;" in section_text(document, "best-kernel")

    shot = tmp_path / "report.png"
    proc = chromium(
        tmp_path / "profile-shot",
        f"--screenshot={shot}",
        f"--window-size={WINDOW[0]},{WINDOW[1]}",
        "--hide-scrollbars",
        report.as_uri(),
    )
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    pixels = read_rgb(shot)
    assert pixels.shape == (WINDOW[1], WINDOW[0], 3)
    assert tuple(pixels[10, 10]) == (0x1C, 0x27, 0x33)  # the header's background
    colours = {tuple(p) for p in pixels[::4, ::4].reshape(-1, 3)}
    assert len(colours) > 200  # text, charts and highlighted code, not a blank or an error page

    def drawn(hex_colour):
        rgb = tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
        return int((pixels == rgb).all(axis=2).sum())

    assert drawn("#1565c0") > 100  # the best-speedup line and its points
    assert drawn(charts.STATUS_COLOURS["ok"]) > 100  # the "ok" bar and dots
    assert drawn(charts.STATUS_COLOURS["compile_error"]) > 50
