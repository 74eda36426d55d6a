"""The auditor's pages in a real browser (system Chromium, Selenium): signed in as the tenant's auditor,
the executions list filtered by a search, an execution with an erased part (when, why, by whom), one
step's page and its link to the whole execution, and who read what at ``/reads`` filtered by reader.
Screenshots are saved (``VIEWER_SCREENSHOTS=docs/screenshots`` keeps them: ``workbench-*.png``)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.phoenix import wait_until
from tests.viewer import test_workbench
from tests.viewer.conftest import CANARY, TOKENS
from tests.viewer.test_browser import _browser

pytestmark = pytest.mark.slow
server = test_workbench.server
"""Tenant acme: alice's two steps, bob's run and alice's erased run, signed (``test_workbench``)."""


def test_the_auditors_pages_in_a_browser(server, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    shots = Path(os.environ.get("VIEWER_SCREENSHOTS") or tmp_path / "screenshots")
    shots.mkdir(parents=True, exist_ok=True)
    browser = _browser()
    try:
        browser.set_window_size(1400, 900)
        browser.get(f"{server.url}/signin?next=/%3Fq%3Drun-")
        browser.find_element(By.NAME, "token").send_keys(TOKENS["ada"])
        browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        wait_until(lambda: browser.title.startswith("Executions"), 30, "the executions list")
        assert browser.find_element(By.NAME, "q").get_attribute("value") == "run-"
        search = browser.find_element(By.NAME, "q")
        search.clear()
        search.send_keys("alice")
        browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        wait_until(lambda: "q=alice" in browser.current_url, 30, "the filtered list")
        ids = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "tbody td a code")]
        assert ids == ["run-gone", "run-alice"]  # bob's run is not alice's
        assert browser.find_element(By.CSS_SELECTOR, ".paging").text == "executions 1-2 of 2"
        erased = [e.text for e in browser.find_elements(By.CSS_SELECTOR, "td.erased")]
        assert erased == ["1", "0"]
        browser.save_screenshot(str(shots / "workbench-executions.png"))

        browser.find_element(By.LINK_TEXT, "run-gone").click()
        wait_until(lambda: browser.title.startswith("Execution run-gone"), 30, "the erased execution")
        erasure = browser.find_element(By.CSS_SELECTOR, ".erasure").text
        assert "by dpo: gdpr-17 (signed)" in erasure and erasure.startswith("erased 20")
        assert browser.find_element(By.CSS_SELECTOR, "td.standing").text == "signed"
        assert browser.find_elements(By.CSS_SELECTOR, "pre.untrusted") == []
        browser.save_screenshot(str(shots / "workbench-erased.png"))

        browser.get(f"{server.url}/executions/run-alice?tenant=acme&step=s1")
        wait_until(lambda: browser.title.startswith("Execution run-alice"), 30, "a step's page")
        (text,) = browser.find_elements(By.CSS_SELECTOR, "pre.untrusted")
        assert CANARY in text.text
        assert (
            browser.find_element(By.CSS_SELECTOR, "a.trace")
            .get_attribute("href")
            .startswith("http://jaeger.local/trace/")
        )
        assert "once by ada" in browser.find_element(By.CSS_SELECTOR, "td.reads").text
        browser.save_screenshot(str(shots / "workbench-step.png"))
        browser.find_element(By.CSS_SELECTOR, "a.whole").click()
        wait_until(lambda: len(browser.find_elements(By.CSS_SELECTOR, "section.step")) == 2, 30, "the whole run")

        browser.find_element(By.LINK_TEXT, "reads").click()
        wait_until(lambda: browser.title.startswith("Reads"), 30, "the reads page")
        reader = browser.find_element(By.NAME, "reader")
        reader.send_keys("ada")
        browser.find_element(By.NAME, "execution").send_keys("run-alice")
        browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        wait_until(lambda: "reader=ada" in browser.current_url, 30, "the filtered reads")
        rows = browser.find_elements(By.CSS_SELECTOR, "tbody tr")
        assert len(rows) == 3  # the step's part, then both steps' parts of the whole execution
        assert {r.find_elements(By.TAG_NAME, "td")[1].text for r in rows} == {"ada"}
        assert {r.find_element(By.CSS_SELECTOR, "td.outcome").text for r in rows} == {"ok"}
        places = rows[0].find_elements(By.TAG_NAME, "td")[3].text.splitlines()  # both steps' text is the same blob
        # the attempt numbers are the process's (earlier tests in it captured the same steps): not pinned
        assert [re.sub(r"#\d+", "#n", p) for p in places] == [
            "step s0 #n part 0 (summary)",
            "step s1 #n part 0 (summary)",
        ]
        assert CANARY not in browser.page_source
        browser.save_screenshot(str(shots / "workbench-reads.png"))
    finally:
        browser.quit()
