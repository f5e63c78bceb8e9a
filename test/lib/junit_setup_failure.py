"""Record a suite whose runner failed without a failed test case as one failure.

usage: junit_setup_failure.py <report.xml> <crash.xml> <classname> <message>

A runner that fails in its global setup (a server that would not start) can
leave a report with no failed test case; the closing `N passed, N failed`
line would then read green. When <report.xml> holds no failure, this writes
<crash.xml> with one failed test case.
"""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

report, crash, classname, message = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4]
failed = 0
if report.is_file():
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
if failed == 0:
    suite = ET.Element("testsuite", name=classname, tests="1", failures="1")
    case = ET.SubElement(suite, "testcase", classname=classname, name="suite setup")
    ET.SubElement(case, "failure", message=message)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(crash, encoding="utf-8", xml_declaration=True)
