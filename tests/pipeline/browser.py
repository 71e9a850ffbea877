"""A real headless browser for the report's tests: Debian's Chromium (.ci/run installs it)."""

from __future__ import annotations

import html
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

CHROMIUM = next(filter(None, (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome"))), None)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None, reason="no headless Chromium on this machine: .ci/run installs Debian's package `chromium`; "
                             "elsewhere `apt-get install chromium`")


def _chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="fedrepro-chromium-") as profile:  # no state shared between runs
        return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                               f"--user-data-dir={profile}", *args], capture_output=True, text=True, timeout=180,
                              check=True)


def rendered_dom(page: Path, budget_ms: int = 8000) -> str:
    """The page's DOM after its scripts ran (a report draws itself with JavaScript)."""
    return _chromium(f"--virtual-time-budget={budget_ms}", "--dump-dom", page.resolve().as_uri()).stdout


def screenshot(page: Path, png: Path, size: str = "1400,1000", budget_ms: int = 8000) -> None:
    _chromium(f"--virtual-time-budget={budget_ms}", f"--window-size={size}", f"--screenshot={png.resolve()}",
              page.resolve().as_uri())


def probed(page: Path, probe: str, size: str = "1400,1000", budget_ms: int = 8000) -> str:
    """What the script `probe` (JavaScript) leaves as the text of a <pre id="probe">, run on a copy of `page` once
    it has loaded: a headless Chromium answers no questions, so a test asks them by a script in the page."""
    copy = page.with_name(f"{page.stem}.probed.html")
    text = page.read_text(errors="replace")
    end = text.rindex("</body>")
    copy.write_text(text[:end] + f"<script>{probe}</script>" + text[end:])
    dom = _chromium(f"--virtual-time-budget={budget_ms}", f"--window-size={size}", "--dump-dom",
                    copy.resolve().as_uri()).stdout
    start = dom.find('<pre id="probe">')
    assert start >= 0, f"the probe left no answer in {copy}"
    return html.unescape(dom[start + len('<pre id="probe">'):dom.index("</pre>", start)])
