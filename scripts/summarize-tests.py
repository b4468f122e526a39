#!/usr/bin/env python3
"""Adds up JUnit XML reports (lit, GoogleTest, pytest) into one closing line:
`N passed, M failed` (skipped tests are counted apart). Exits 1 when a test
failed or a report is missing or unreadable."""

import sys
import xml.etree.ElementTree as ET


def count(path):
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.iter("testsuite")
    tests = failures = skipped = 0
    for suite in suites:
        for case in suite.iter("testcase"):
            tests += 1
            if case.find("failure") is not None or case.find("error") is not None:
                failures += 1
            elif case.find("skipped") is not None:
                skipped += 1
    return tests, failures, skipped


def main(paths):
    passed = failed = skipped = 0
    for path in paths:
        try:
            tests, failures, skips = count(path)
        except (OSError, ET.ParseError) as error:
            print(f"cannot read test report {path}: {error}")
            failed += 1
            continue
        print(f"  {path}: {tests - failures - skips} passed, {failures} failed, {skips} skipped")
        passed += tests - failures - skips
        failed += failures
        skipped += skips
    print(f"{passed} passed, {failed} failed" + (f", {skipped} skipped" if skipped else ""))
    return 1 if failed or not paths else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
