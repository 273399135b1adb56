import html
import re

import pytest

import cuoverlap


def test_report_shows_as_html_in_an_iframe(pageable):
    report = cuoverlap.report(pageable)
    shown = report._repr_html_()
    assert shown.startswith("<iframe ") and shown.endswith("</iframe>")
    page = html.unescape(re.search(r'srcdoc="([^"]*)"', shown).group(1))
    assert page == report.html
    assert page.lstrip().lower().startswith("<!doctype html>")
    assert "NVIDIA H100 80GB HBM3" in page
    assert "pageable-memcpy" in page


def test_report_data_and_text(pageable):
    report = cuoverlap.report(pageable)
    assert report.data == cuoverlap.analyze(pageable)
    assert report["traces"][0]["devices"][0]["overlap_ratio"] == 0.0
    text = str(report)
    assert "overlap     ratio 0.000" in text
    assert "\x1b[" not in text
    assert report.render("markdown").startswith("#")


def test_report_of_bad_input_raises_at_once(tmp_path):
    with pytest.raises(cuoverlap.CuoverlapError) as error:
        cuoverlap.report(tmp_path / "missing.sqlite")
    assert error.value.returncode == 2
