"""`bargein inspect` on a real release and its work dir, checked in headless Chromium.

The browser is Debian's ``chromium`` driven by Selenium through the system ``chromedriver``
(browser downloads are impossible here). ``.ci/run`` installs both; elsewhere the browser tests
skip and say what to install.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

CONFIG = {
    "name": "inspect-tiny", "version": "0.1.0", "seed": 5,
    "scenarios": {"n": 2, "domains": ["telecom", "travel"]},
    "audio": {"assistant_voice": "espeak:en-us+f3", "user_voice": "espeak:en-gb+m3",
              "workers": 1},
    "repair": {"signals": ["white_noise"], "max_items": 4},
    "timing": {"per_type": 1},
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("inspect")
    cfg = tmp / "tiny.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    out, work = tmp / "release", tmp / "work"
    proc = subprocess.run([sys.executable, "-m", "bargein.cli", "--workdir", str(work), "build",
                           "--config", str(cfg), "--out", str(out)],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    site = tmp / "site"
    proc = subprocess.run([sys.executable, "-m", "bargein.cli", "inspect", str(out), "--out",
                           str(site)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "conversation pages" in proc.stdout
    return {"release": out, "work": work, "site": site, "tmp": tmp}


def _conversation_rows(release: Path) -> list[dict]:
    from bargein.releases.reader import iter_rows

    return list(iter_rows(release, "conversations"))


def test_site_has_a_page_per_conversation_and_the_release_audio(built):
    site, rows = built["site"], _conversation_rows(built["release"])
    assert len(rows) == 2
    for row in rows:
        page = site / "conv" / f"{row['conversation_id']}.html"
        assert page.is_file()
        html = page.read_text()
        # the page's cut-ins are the release's own cut times, message by message
        data = json.loads(html.split('id="page-data">', 1)[1].split("</script>", 1)[0])
        want = sorted((s["message_index"], round(s["cut_s"], 6)) for s in row["segments"]
                      if s["cut_s"] is not None)
        assert sorted((c["message_index"], round(c["cut_s"], 6)) for c in data["cuts"]) == want
        assert want, "the tiny build has interruptions"
        # the audio played is byte for byte the release's file
        audio = site / "audio" / "conv" / f"{row['conversation_id']}.flac"
        assert audio.read_bytes() == row["audio"]["bytes"]
        # heard text and the unheard remainder are both shown for a cut message
        cut = next(m for m in row["messages"] if m["interruption_type"])
        assert "unheard" in html and cut["heard_text"].split()[-1] in html
    index = (site / "index.html").read_text()
    assert "Statistics" in index          # the card's tables are on the index
    assert (site / "audit.html").is_file()
    assert list((site / "repair").glob("*.html")) and list((site / "timing").glob("*.html"))


def test_workdir_before_release_is_inspected_too(built, tmp_path):
    from bargein.inspector import write_site

    rep = write_site(built["work"], tmp_path / "wsite")
    assert rep.conversations == 2 and rep.timing_pages >= 1
    audit = (tmp_path / "wsite" / "audit.html").read_text()
    assert "accepted" in audit or "repaired" in audit


def test_out_folder_that_is_not_a_site_is_refused_and_untouched(built, tmp_path):
    precious = tmp_path / "mine"
    precious.mkdir()
    (precious / "precious.txt").write_text("keep me")
    proc = subprocess.run([sys.executable, "-m", "bargein.cli", "inspect", str(built["release"]),
                           "--out", str(precious)], capture_output=True, text=True, timeout=300)
    assert proc.returncode != 0
    assert str(precious) in proc.stderr and "Fix:" in proc.stderr and "Traceback" not in proc.stderr
    assert sorted(p.name for p in precious.iterdir()) == ["precious.txt"]
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".building")]


def test_a_release_pulled_from_the_hub_is_inspected(built, tmp_path, monkeypatch):
    """The loopback Hub speaks the endpoints huggingface_hub calls (the real Hub is not
    reachable from CI); the release goes up with push and comes back through `inspect REF`."""
    import huggingface_hub.constants as C
    from click.testing import CliRunner

    from bargein.cli import cli
    from bargein.releases.hub import push_release
    from bargein.testing.hub_server import LoopbackHub

    monkeypatch.setattr(C, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(C, "HF_HUB_DISABLE_XET", True)
    with LoopbackHub({"hf_t": "alice"}) as hub:
        push_release(built["release"], "org/tiny", token="hf_t", endpoint=hub.endpoint)
        monkeypatch.setenv("HF_TOKEN", "hf_t")
        r = CliRunner().invoke(cli, ["inspect", "org/tiny@v0.1.0", "--endpoint", hub.endpoint,
                                     "--out", str(tmp_path / "hs")])
    assert r.exit_code == 0, r.output
    assert len(list((tmp_path / "hs" / "conv").glob("*.html"))) == 2


def test_rewriting_a_site_replaces_it(built, tmp_path):
    from bargein.inspector import write_site

    write_site(built["release"], tmp_path / "s", limit=1)
    assert len(list((tmp_path / "s" / "conv").glob("*.html"))) == 1
    write_site(built["release"], tmp_path / "s")
    assert len(list((tmp_path / "s" / "conv").glob("*.html"))) == 2


def test_serve_answers_on_loopback(built):
    from bargein.inspector.serve import make_server

    httpd = make_server(built["site"], 0)
    t = threading.Thread(target=httpd.serve_forever, daemon=True)
    t.start()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", httpd.server_address[1], timeout=10)
        conn.request("GET", "/index.html")
        r = conn.getresponse()
        assert r.status == 200 and b"conversations" in r.read()
    finally:
        httpd.shutdown()
        httpd.server_close()


# ---- in a real browser -------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    if not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()):
        pytest.skip("headless browser test needs Debian's chromium and chromium-driver: "
                    "apt-get install -y chromium chromium-driver (.ci/run installs them)")
    webdriver = pytest.importorskip("selenium.webdriver",
                                    reason="pip install 'bargein[test]' (selenium)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    opts = Options()
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1400,1600", "--autoplay-policy=no-user-gesture-required"):
        opts.add_argument(a)
    opts.binary_location = CHROMIUM
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    drv = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    drv.set_page_load_timeout(60)
    yield drv
    drv.quit()


def _errors(drv) -> list[dict]:
    return [e for e in drv.get_log("browser") if e["level"] == "SEVERE"]


def _wait(drv, script: str, timeout: float = 20.0):
    end = time.time() + timeout
    while time.time() < end:
        v = drv.execute_script(script)
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for: {script}")


def test_every_page_loads_without_console_errors(built, browser):
    site = built["site"]
    pages = [site / "index.html", site / "audit.html", *sorted((site / "conv").glob("*.html")),
             *sorted((site / "repair").glob("*.html")), *sorted((site / "timing").glob("*.html"))]
    browser.get_log("browser")
    for page in pages:
        browser.get(page.as_uri())
        _wait(browser, "return document.readyState === 'complete'")
        assert not _errors(browser), (page.name, _errors(browser))


def test_click_on_a_cut_in_seeks_the_player(built, browser, tmp_path):
    row = _conversation_rows(built["release"])[0]
    cuts = sorted(s["cut_s"] for s in row["segments"] if s["cut_s"] is not None)
    browser.get((built["site"] / "conv" / f"{row['conversation_id']}.html").as_uri())
    _wait(browser, "return document.getElementById('player').readyState >= 1")
    markers = browser.find_elements("css selector", ".cut-marker")
    assert len(markers) == len(cuts)
    for marker in (markers[0], markers[-1]):
        want = float(marker.get_attribute("data-t"))
        assert min(abs(want - c) for c in cuts) < 1e-6       # the marker is a release cut time
        marker.click()
        _wait(browser, "return !document.getElementById('player').seeking")
        got = browser.execute_script("return document.getElementById('player').currentTime")
        assert abs(got - want) <= 0.050, (got, want)
    # clicking a message plays it from its start
    msg = browser.find_elements("css selector", ".msg")[2]
    msg.find_element("css selector", ".heard").click()
    start = float(msg.get_attribute("data-t"))
    got = browser.execute_script("return document.getElementById('player').currentTime")
    assert abs(got - start) <= 0.5, (got, start)
    shot = tmp_path / "conversation.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    assert not _errors(browser), _errors(browser)


def test_filters_change_the_list(built, browser):
    browser.get((built["site"] / "index.html").as_uri())
    _wait(browser, "return document.querySelectorAll('#rows tr.entry').length > 0")
    rows = lambda: browser.execute_script(  # noqa: E731
        "return Array.from(document.querySelectorAll('#rows tr.entry')).map(r => r.children[1].textContent)")
    assert sorted(rows()) == ["telecom", "travel"]
    from selenium.webdriver.support.ui import Select

    Select(browser.find_element("id", "f-domain")).select_by_value("travel")
    assert rows() == ["travel"]
    assert "1 of 2" in browser.find_element("id", "count").text
    Select(browser.find_element("id", "f-domain")).select_by_value("")
    types = [o.get_attribute("value") for o in
             Select(browser.find_element("id", "f-type")).options if o.get_attribute("value")]
    assert types
    Select(browser.find_element("id", "f-type")).select_by_value(types[0])
    assert 1 <= len(rows()) <= 2
    assert not _errors(browser), _errors(browser)
