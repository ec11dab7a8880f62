"""The fault suite's tally is counted from the test reports of the cases that ran, by marker; it is
never a number typed into a test."""

from pathlib import Path

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).parent / "conftest.py").read_text()


def test_the_tally_counts_marked_cases_that_ran_with_their_outcomes(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_sample="""
        import pytest

        @pytest.mark.fault
        @pytest.mark.parametrize("n", [1, 2, 3])
        def test_injected(n):
            assert n != 3

        @pytest.mark.bad_input
        def test_bad():
            pass

        @pytest.mark.bad_input
        @pytest.mark.skip(reason="not run")
        def test_skipped():
            pass

        def test_unmarked():
            pass
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=1, skipped=1)
    result.stdout.fnmatch_lines(["fault suite: 3 fault-injection cases ran (2 passed, 1 failed); "
                                 "1 bad-input cases ran (1 passed)"])


def test_no_tally_line_when_no_marked_case_ran(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_sample="def test_plain():\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert "fault suite" not in result.stdout.str()
