"""Evidence that outlives the run: saved mail, report extras, and kept inboxes (issue 17)."""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import requests

from pytest_tempinbox.models import Address, Attachment, Envelope, Message
from pytest_tempinbox.plugin.artifacts import folder_name, page

MAILING_TEST = """
import smtplib
from email.message import EmailMessage

def send(server, to, subject, html=None):
    message = EmailMessage()
    message["From"] = "Shop <shop@example.com>"
    message["To"] = to
    message["Subject"] = subject
    message.set_content("Your code is 482913")
    if html is not None:
        message.add_alternative(html, subtype="html")
    with smtplib.SMTP(server.smtp_host, server.smtp_port, local_hostname="client.test") as smtp:
        smtp.send_message(message)

def test_receipt_fails(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Your receipt",
         '<p>Paid</p><script>alert(1)</script><img src="https://tracker.test/p.gif">')
    tempinbox.wait_for_message(subject="receipt")
    assert False, "the receipt is wrong"

def test_two_inboxes_fail(tempinbox_factory, tempinbox_server):
    first, second = tempinbox_factory(), tempinbox_factory()
    send(tempinbox_server, first.address, "Plain one")
    send(tempinbox_server, second.address, "Plain two")
    second.wait_for_message(subject="two")
    first.wait_for_message(subject="one")
    assert False

def test_passes(tempinbox, tempinbox_server):
    send(tempinbox_server, tempinbox.address, "Fine")
    tempinbox.wait_for_message(subject="Fine")
"""


def message(*, html: str | None, text: str | None = "hello") -> Message:
    received = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
    return Message(
        id="m1",
        inbox="to@tempinbox.test",
        envelope=Envelope("shop@example.com", ("to@tempinbox.test",)),
        message_id=None,
        sender=Address("Shop <&>", "shop@example.com"),
        to=(Address(None, "to@tempinbox.test"),),
        cc=(),
        reply_to=(),
        subject="<b>Hi</b>",
        date=received,
        received_at=received,
        text=text,
        html=html,
        headers={},
        attachments=(Attachment(0, "a<b>.pdf", "application/pdf", 3, None, False),),
        links=(),
        codes=(),
        size=10,
    )


def test_a_test_folder_name_is_safe_and_unique() -> None:
    names = {folder_name(nodeid) for nodeid in ("t.py::f[a/b]", "t.py::f[a:b]", "t.py::f[a b]")}
    assert len(names) == 3
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", name) for name in names)
    assert len(folder_name("t.py::f[" + "x" * 500 + "]")) < 100


def test_a_saved_page_frames_the_html_without_scripts_or_remote_images() -> None:
    shown = page(message(html="<p>Hi</p><script>alert(1)</script>"), nodeid="t.py::f")
    assert "<script>" not in shown  # only escaped, inside the frame's srcdoc
    assert '<iframe sandbox referrerpolicy="no-referrer"' in shown
    assert "default-src &#x27;none&#x27;" in shown.split("srcdoc=", 1)[1]
    assert "default-src 'none'; style-src 'unsafe-inline'; img-src data:;" in shown
    assert "&lt;b&gt;Hi&lt;/b&gt;" in shown
    assert "Shop &lt;&amp;&gt;" in shown
    assert "a&lt;b&gt;.pdf (application/pdf, 3 bytes)" in shown
    assert "t.py::f" in shown


def test_a_saved_page_shows_a_text_only_message_in_a_pre() -> None:
    shown = page(message(html=None, text="line <1>\nline 2"))
    assert "<pre>line &lt;1&gt;\nline 2</pre>" in shown
    assert "<iframe" not in shown


def test_artifacts_save_each_failing_tests_mail(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mail=MAILING_TEST)
    result = pytester.runpytest("--tempinbox-artifacts", "evidence", "-p", "no:randomly")
    result.assert_outcomes(failed=2, passed=1)

    root = pytester.path / "evidence"
    folders = sorted(path.name for path in root.iterdir())
    assert folders == sorted(
        folder_name(f"test_mail.py::{name}")
        for name in ("test_receipt_fails", "test_two_inboxes_fail")
    )
    receipt = root / folder_name("test_mail.py::test_receipt_fails")
    summary = (receipt / "summary.txt").read_text()
    assert summary.startswith("test: test_mail.py::test_receipt_fails\n")
    assert "from Shop <shop@example.com>: 'Your receipt'" in summary
    (inbox,) = (path for path in receipt.iterdir() if path.is_dir())
    assert re.fullmatch(r"\w+@tempinbox\.test", inbox.name)
    eml, html = sorted(inbox.iterdir())
    assert (eml.name, html.name) == ("01-Your-receipt.eml", "01-Your-receipt.html")
    assert b"Subject: Your receipt" in eml.read_bytes()
    shown = html.read_text()
    assert "<iframe sandbox" in shown
    assert "<script>" not in shown
    assert "tracker.test" in shown.split("srcdoc=", 1)[1]  # kept in the frame, blocked by CSP

    two = root / folder_name("test_mail.py::test_two_inboxes_fail")
    assert len([path for path in two.iterdir() if path.is_dir()]) == 2
    lines = (two / "summary.txt").read_text().splitlines()
    assert len(lines) == 3  # the test, then one line per message
    page_of_two = next(two.glob("*/01-Plain-two.html")).read_text()
    assert "<pre>Your code is 482913\n</pre>" in page_of_two


def test_a_summary_names_an_inbox_that_received_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_silent="def test_silent(tempinbox):\n    assert False\n")
    pytester.runpytest("--tempinbox-artifacts", "evidence").assert_outcomes(failed=1)
    folder = pytester.path / "evidence" / folder_name("test_silent.py::test_silent")
    test, silent = (folder / "summary.txt").read_text().splitlines()
    assert test == "test: test_silent.py::test_silent"
    assert re.fullmatch(r"\w+@tempinbox\.test: no mail", silent)


def test_a_failed_setup_saves_the_mail_too(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_setup="""
        import pytest

        @pytest.fixture
        def broken(tempinbox):
            raise RuntimeError("the fixture broke")

        def test_never_runs(broken):
            pass
        """
    )
    pytester.runpytest("--tempinbox-artifacts", "evidence").assert_outcomes(errors=1)
    folder = pytester.path / "evidence" / folder_name("test_setup.py::test_never_runs")
    assert (folder / "summary.txt").read_text().endswith(": no mail\n")


def test_artifacts_come_from_the_ini_file(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntempinbox_artifacts = from-ini\n")
    pytester.makepyfile(test_mail=MAILING_TEST)
    pytester.runpytest("-k", "receipt").assert_outcomes(failed=1)
    assert len(list((pytester.path / "from-ini").iterdir())) == 1


def test_nothing_is_saved_without_the_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_mail=MAILING_TEST)
    pytester.runpytest("-k", "receipt").assert_outcomes(failed=1)
    made = [path.name for path in pytester.path.iterdir() if path.is_dir()]
    assert [name for name in made if not name.startswith((".", "__"))] == []


def test_artifacts_under_xdist_are_written_by_the_workers(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    pytester.makepyfile(test_mail=MAILING_TEST)
    target = tmp_path / "evidence"
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "xdist", "--tempinbox-artifacts", target
    )
    result.assert_outcomes(failed=2, passed=1)
    assert len(list(target.iterdir())) == 2
    assert list(target.glob("*/*/01-Your-receipt.eml"))


def test_a_pytest_html_report_embeds_the_mail(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    pytester.makepyfile(test_mail=MAILING_TEST)
    result = pytester.runpytest("-p", "html", "--html=report.html", "-k", "receipt")
    result.assert_outcomes(failed=1)
    report = (pytester.path / "report.html").read_text()
    assert "Your receipt" in report
    assert "iframe sandbox" in report


def test_a_pytest_html_report_links_the_saved_files(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_html")
    pytester.makepyfile(test_mail=MAILING_TEST)
    args = ("-p", "html", "--html=out/report.html", "--tempinbox-artifacts", "evidence")
    pytester.runpytest(*args, "-k", "receipt").assert_outcomes(failed=1)
    report = (pytester.path / "out" / "report.html").read_text()
    folder = folder_name("test_mail.py::test_receipt_fails")
    assert f"../evidence/{folder}/" in report
    assert "01-Your-receipt.eml" in report
    assert "01-Your-receipt.html" in report


def test_allure_results_carry_the_mail(pytester: pytest.Pytester) -> None:
    pytest.importorskip("allure_pytest")
    pytester.makepyfile(test_mail=MAILING_TEST)
    result = pytester.runpytest("-p", "allure_pytest", "--alluredir=allure", "-k", "receipt")
    result.assert_outcomes(failed=1)
    results = [
        json.loads(path.read_text()) for path in (pytester.path / "allure").glob("*-result.json")
    ]
    (test,) = results
    kinds = {item["type"] for item in test["attachments"]}
    assert kinds == {"text/html", "message/rfc822"}
    (eml,) = (pytester.path / "allure").glob("*-attachment.eml")
    assert b"Subject: Your receipt" in eml.read_bytes()


KEEP_TEST = """
import json, pathlib

def test_fails(tempinbox, tempinbox_server):
    where = [tempinbox.address, tempinbox_server.api_url]
    pathlib.Path("address.json").write_text(json.dumps(where))
    assert False
"""


# pytest under a pseudo-terminal, as a person runs it. Through python -c, so that
# Ctrl-C raises KeyboardInterrupt even when this run ignores SIGINT (a background job).
TERMINAL_PYTEST = (
    "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.exit(pytest.main(sys.argv[1:]))"
)


def read_until(terminal: int, wanted: bytes, timeout: float) -> bytes:
    output = b""
    deadline = time.monotonic() + timeout
    while wanted not in output and time.monotonic() < deadline:
        ready, _, _ = select.select([terminal], [], [], 0.5)
        if ready:
            try:
                output += os.read(terminal, 65536)
            except OSError:  # the other end closed
                break
    return output


@pytest.mark.skipif(sys.platform == "win32", reason="a pseudo-terminal is POSIX")
def test_keep_holds_the_server_and_the_failing_inbox_until_ctrl_c(
    pytester: pytest.Pytester, http: requests.Session
) -> None:
    import pty

    pytester.makepyfile(test_keep="def test_fails(tempinbox):\n    assert False\n")
    environment = {name: value for name, value in os.environ.items() if name != "CI"}
    terminal, child = pty.openpty()
    command = [sys.executable, "-c", TERMINAL_PYTEST, "--tempinbox-keep", "test_keep.py"]
    with subprocess.Popen(
        command, cwd=pytester.path, env=environment, stdin=child, stdout=child, stderr=child
    ) as process:
        os.close(child)
        try:
            shown = read_until(terminal, b"(test_keep.py::test_fails)", timeout=60).decode()
            assert "Inbox viewer kept open for 1 failing test(s): http://127.0.0.1:" in shown
            assert "press Ctrl-C to stop" in shown
            link = re.search(r"(http://127\.0\.0\.1:\d+)/\?inbox=(\S+@tempinbox\.test)", shown)
            assert link is not None, shown
            kept = http.get(f"{link[1]}/api/messages/{link[2]}", timeout=10)
            assert (kept.status_code, kept.json()) == (200, [])
            assert process.poll() is None  # still waiting

            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=20) == 1  # the run's own status: a test failed
        finally:
            process.kill()
            os.close(terminal)


def test_keep_does_not_wait_outside_a_terminal(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_keep=KEEP_TEST)
    result = pytester.runpytest_subprocess("--tempinbox-keep")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["tempinbox: --tempinbox-keep: not waiting (CI, not a terminal, or Ctrl-C)*"]
    )
    result.stdout.fnmatch_lines(
        ["  http://127.0.0.1:*/?inbox=*@tempinbox.test (test_keep.py::test_fails)"]
    )


def test_keep_says_nothing_when_every_test_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_ok(tempinbox):\n    pass\n")
    result = pytester.runpytest("--tempinbox-keep")
    result.assert_outcomes(passed=1)
    assert "--tempinbox-keep" not in result.stdout.str()
    assert "kept open" not in result.stdout.str()


def test_a_saved_page_runs_no_script_and_loads_nothing_in_a_browser(
    pytester: pytest.Pytester,
) -> None:
    playwright = pytest.importorskip("playwright.sync_api")
    chromium = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium")
    if not chromium:
        pytest.skip("no Chromium to drive: install one (Debian: apt-get install chromium)")
    pytester.makepyfile(test_mail=MAILING_TEST)
    pytester.runpytest("--tempinbox-artifacts", "evidence", "-k", "receipt")
    (saved,) = (pytester.path / "evidence").glob("*/*/01-Your-receipt.html")

    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=chromium)
        try:
            page = browser.new_page()
            requested: list[str] = []
            dialogs: list[str] = []
            # Chromium's preload scanner may announce the image before the policy
            # blocks it: what matters is that nothing but the page is loaded.
            page.on("requestfinished", lambda request: requested.append(request.url))
            page.on("dialog", lambda dialog: dialogs.append(dialog.message))
            page.goto(saved.as_uri())
            page.wait_for_timeout(300)
            (_, body) = page.frames
            assert body.inner_text("body").strip() == "Paid"
        finally:
            browser.close()
    assert requested == [saved.as_uri()]  # not the tracking image
    assert dialogs == []  # the script did not run
