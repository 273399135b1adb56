import sys

import pytest

import cuoverlap


def test_record_runs_the_program(tmp_path, capfd):
    trace = tmp_path / "t.sqlite"
    assert cuoverlap.record([sys.executable, "-c", "print('hello from the program')"], output=trace) == str(trace)
    assert "hello from the program" in capfd.readouterr().out


def test_record_raises_with_the_programs_status(tmp_path):
    with pytest.raises(cuoverlap.CuoverlapError) as error:
        cuoverlap.record([sys.executable, "-c", "raise SystemExit(3)"], output=tmp_path / "t.sqlite")
    assert error.value.returncode == 3
    assert error.value.message == "the recorded program exited with status 3"


def test_record_of_a_missing_program_raises_the_commands_error(tmp_path):
    with pytest.raises(cuoverlap.CuoverlapError) as error:
        cuoverlap.record([str(tmp_path / "no-such-program")], output=tmp_path / "t.sqlite")
    assert error.value.returncode == 127
    assert error.value.message.startswith("cuoverlap: error: cannot run ")


def test_record_takes_a_list():
    with pytest.raises(TypeError):
        cuoverlap.record("python train.py")
