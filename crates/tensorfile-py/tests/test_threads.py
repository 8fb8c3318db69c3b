"""`tensorfile.set_threads`: the thread count of the library's parallel work, set once per
process before any work (each case in a fresh interpreter: the count is process-wide)."""

import subprocess
import sys

import pytest


def run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_count_set_is_the_count_used():
    assert run("import tensorfile; tensorfile.set_threads(1); print(tensorfile.threads())") == "1"
    assert run("import tensorfile; tensorfile.set_threads(3); print(tensorfile.threads())") == "3"


def test_zero_threads_and_a_second_setting_are_usage_errors():
    code = (
        "import tensorfile\n"
        "for n in (0, 2, 2):\n"
        "    try:\n"
        "        tensorfile.set_threads(n)\n"
        "        print(n, 'ok')\n"
        "    except tensorfile.UsageError as e:\n"
        "        print(n, 'refused')\n"
    )
    assert run(code).splitlines() == ["0 refused", "2 ok", "2 refused"]


@pytest.mark.parametrize("bad", ["-1", "'2'"])
def test_what_is_not_a_count_is_refused(bad):
    done = subprocess.run([sys.executable, "-c", f"import tensorfile; tensorfile.set_threads({bad})"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and ("OverflowError" in done.stderr or "TypeError" in done.stderr), done.stderr
