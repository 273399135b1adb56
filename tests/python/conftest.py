"""The module's tests run against the installed wheel (scripts/test_python.sh), on bundled traces."""

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.fixture
def pageable():
    return str(DATA / "streams_pageable.sqlite.gz")


@pytest.fixture
def pipeline3():
    return str(DATA / "streams_pipeline3.sqlite.gz")
