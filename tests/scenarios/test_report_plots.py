"""``asyncsched simulate --report``: the run drawn, as HTML (checked in a real headless
Chromium) or PNG, and one clear line when matplotlib is missing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from asyncsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
CHARTS = ("utilization", "queue-shares", "waiting-times", "jobs", "gpus", "gpu-fragmentation")
TITLES = (
    "Utilization",
    "Queue shares",
    "Waiting time per queue",
    "Jobs",
    "GPUs",
    "GPU allocation and fragmentation",
)


def chromium() -> str:
    """Debian's chromium, installed by hack/install-chromium.sh when it is missing."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    done = subprocess.run(
        [str(ROOT / "hack" / "install-chromium.sh")], capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def browse(html: Path, tmp_path: Path, *what: str) -> str:
    """Run headless Chromium on the page with ``what`` (--screenshot=..., --dump-dom)."""
    profile = tmp_path / f"profile-{len(list(tmp_path.iterdir()))}"
    done = subprocess.run(
        [
            chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={profile}",
            "--window-size=1200,2600",
            *what,
            html.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.fixture(scope="module")
def html_report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["simulate", "--example", "gpu-cluster", "--report", str(out)]) == 0
    return out


def test_the_html_report_is_one_self_contained_page_with_every_chart(html_report: Path) -> None:
    page = html_report.read_text()

    for chart in CHARTS:
        assert f'<figure id="{chart}">' in page
    assert page.count("<svg") == len(CHARTS)
    for fetch in ('href="http', "href='http", 'src="', "url(http", "<script", "<link"):
        assert fetch not in page, f"the page would load something: {fetch}"
    assert "all work done at t=3300s" in page, "the run's summary is on the page"


def test_chromium_renders_the_report_with_its_charts_and_no_error(
    html_report: Path, tmp_path: Path
) -> None:
    shot = tmp_path / "shot.png"
    browse(html_report, tmp_path, f"--screenshot={shot}")
    dom = browse(html_report, tmp_path, "--dump-dom")

    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 2600)
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "a blank or nearly blank page"
    white = max(count for count, colour in colours if colour == (255, 255, 255))
    assert white < 0.9 * image.size[0] * image.size[1], "mostly white: charts not drawn"
    for chart in CHARTS:
        assert f'<figure id="{chart}">' in dom
    assert dom.count("<svg") == len(CHARTS)
    for title in TITLES:
        assert f"<b>{title}</b>" in dom
    assert "production/llm-pretrain" in dom, "the job timeline names the jobs"
    for broken in ("Traceback", "Error", "NaN", "nan%"):
        assert broken not in dom


def test_chromium_draws_both_lines_of_the_gpu_fragmentation_chart(
    html_report: Path, tmp_path: Path
) -> None:
    page = html_report.read_text()
    start = page.index('<figure id="gpu-fragmentation">')
    figure = page[start : page.index("</figure>", start) + len("</figure>")]
    alone = tmp_path / "fragmentation.html"
    alone.write_text(f'<!DOCTYPE html><html><body style="margin:0">{figure}</body></html>')
    shot = tmp_path / "fragmentation.png"
    browse(alone, tmp_path, f"--screenshot={shot}")

    pixels = Image.open(shot).convert("RGB").getcolors(maxcolors=1 << 20) or []

    def drawn(colour: tuple[int, int, int]) -> int:
        def near(c: tuple[int, int, int]) -> bool:
            return max(abs(a - b) for a, b in zip(c, colour, strict=True)) <= 40

        return sum(n for n, c in pixels if near(c))

    assert drawn((0x2B, 0x7B, 0xBA)) > 500, "the allocation line (blue) is drawn"
    assert drawn((0xD6, 0x27, 0x28)) > 500, "the fragmentation line (red) is drawn"
    assert "allocated" in figure and "fragmented (of idle)" in figure, "with a legend"


def test_a_png_report_is_one_image(tmp_path: Path) -> None:
    out = tmp_path / "report.png"
    assert main(["simulate", "--example", "gpu-cluster", "--report", str(out)]) == 0

    image = Image.open(out)
    assert image.format == "PNG" and image.size[1] > image.size[0], "six charts, one above another"
    assert len(image.convert("RGB").getcolors(maxcolors=1 << 20) or []) > 50


def test_without_matplotlib_a_report_is_one_line_before_anything_runs(tmp_path: Path) -> None:
    hide = "import sys; sys.modules['matplotlib'] = None\nfrom asyncsched.cli import main\n"
    argv = ["simulate", "--example", "gpu-cluster", "--report", str(tmp_path / "r.html")]
    done = subprocess.run(
        [sys.executable, "-c", f"{hide}sys.exit(main({argv!r}))"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )

    assert done.returncode == 2
    assert done.stderr == (
        "asyncsched: error: --report needs matplotlib, which is not installed: "
        "pip install 'asyncsched[report]'\n"
    )
    assert done.stdout == "" and not (tmp_path / "r.html").exists()


def test_a_report_of_another_kind_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--example", "gpu-cluster", "--report", "out.pdf"]) == 2
    assert (
        capsys.readouterr().err
        == "asyncsched: error: --report out.pdf: name a .html or .png file\n"
    )
