import json
import subprocess
import sys

import pytest

import cuoverlap


def test_analyze_returns_the_json_report(pageable):
    report = cuoverlap.analyze(pageable)
    device = report["traces"][0]["devices"][0]
    assert report["schema"] == "cuoverlap.report/1"
    assert device["name"] == "NVIDIA H100 80GB HBM3"
    assert device["overlap_ratio"] == 0.0
    assert [f["id"] for f in report["traces"][0]["findings"]][0] == "pageable-memcpy"


def test_analyze_is_the_commands_json(pageable):
    command = subprocess.run([cuoverlap.binary(), "analyze", "--format", "json", pageable],
                             capture_output=True, check=True)
    assert cuoverlap.analyze(pageable) == json.loads(command.stdout)


def test_pinned_pipeline_overlaps(pipeline3):
    device = cuoverlap.analyze(pipeline3)["traces"][0]["devices"][0]
    assert device["overlap_ratio"] > 0.5


def test_several_traces_in_one_report(pageable, pipeline3):
    report = cuoverlap.analyze([pageable, pipeline3])
    assert [trace["path"] for trace in report["traces"]] == [pageable, pipeline3]


def test_options_are_command_options(pageable):
    gaps = cuoverlap.analyze(pageable, gap_threshold="1ms")["traces"][0]["devices"][0]["gaps"]
    assert gaps["threshold_ns"] == 1_000_000
    assert gaps["count"] == 0
    assert cuoverlap.analyze(pageable)["traces"][0]["devices"][0]["gaps"]["count"] == 55


def test_missing_trace_raises_the_commands_error(tmp_path):
    missing = tmp_path / "missing.sqlite"
    with pytest.raises(cuoverlap.CuoverlapError) as error:
        cuoverlap.analyze(missing)
    assert error.value.returncode == 2
    assert error.value.message == f"cuoverlap: error: {missing}: cannot open: No such file or directory"
    assert "exit status 2" in str(error.value)


def test_unknown_option_raises(pageable):
    with pytest.raises(cuoverlap.CuoverlapError) as error:
        cuoverlap.analyze(pageable, no_such_option=1)
    assert error.value.returncode == 2
    assert "--no-such-option" in error.value.message


def test_format_is_not_an_option_of_analyze(pageable):
    with pytest.raises(TypeError):
        cuoverlap.analyze(pageable, format="html")


def test_text_file_is_bad_input(tmp_path):
    text = tmp_path / "notes.sqlite"
    text.write_text("not a database\n")
    with pytest.raises(cuoverlap.CuoverlapError) as error:
        cuoverlap.analyze(text)
    assert error.value.returncode == 2
    assert error.value.message.startswith(f"cuoverlap: error: {text}")


def test_python_m_is_the_command(pageable, tmp_path):
    version = subprocess.run([sys.executable, "-m", "cuoverlap", "-V"], capture_output=True, text=True)
    assert version.returncode == 0
    assert version.stdout.strip() == subprocess.run([cuoverlap.binary(), "-V"], capture_output=True,
                                                    text=True).stdout.strip()
    missing = str(tmp_path / "missing.sqlite")
    failed = subprocess.run([sys.executable, "-m", "cuoverlap", "analyze", missing],
                            capture_output=True, text=True)
    assert failed.returncode == 2
    assert failed.stderr == f"cuoverlap: error: {missing}: cannot open: No such file or directory\n"
    text = subprocess.run([sys.executable, "-m", "cuoverlap", "analyze", "--color", "never", pageable],
                          capture_output=True, text=True)
    assert text.returncode == 0
    assert "overlap     ratio 0.000" in text.stdout


def test_option_values_may_start_with_a_dash(pageable):
    with pytest.raises(cuoverlap.CuoverlapError) as error:
        cuoverlap.analyze(pageable, window="-1ms:+20ms")
    assert error.value.message == "cuoverlap: error: bad duration '-1ms': expected a number with ns, us, ms or s"
    windowed = cuoverlap.analyze(pageable, window="+1ms:+20ms")["traces"][0]["devices"][0]
    assert 0 < windowed["span_ns"] <= 19_000_000
