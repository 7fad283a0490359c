"""What CI systems read: the gate as JUnit XML, and whether to draw a progress bar.

JUnit XML is the format CI servers (GitHub Actions reporters, GitLab, Jenkins) show as
test results: here one ``testcase`` per gate rule and variant, a failed rule a
``failure`` whose message is the rule's detail, and optionally one ``testcase`` per case.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["case_rows", "junit_xml", "show_progress"]


def junit_xml(result: pd.DataFrame, cases: pd.DataFrame | None = None, name: str = "gate") -> str:
    """The gate ``result`` as a JUnit XML document (one test suite, or two with ``cases``).

    ``cases`` has one row per case with ``variant``, ``case_id``, ``k``, ``n``,
    ``passed`` and ``detail`` (see :func:`case_rows`).
    """
    root = ET.Element("testsuites", name=f"evalnb {name}")
    rows = [
        (
            f"evalnb.{name}.{row['rule'].split()[0]}",
            f"{row['rule']} [{row['variant']}]" if row["variant"] else str(row["rule"]),
            bool(row["passed"]),
            str(row["detail"]),
        )
        for row in result.to_dict("records")
    ]
    _suite(root, name, rows)
    if cases is not None:
        case_rows_ = [
            (
                f"evalnb.cases._files.{row['variant']}",
                str(row["case_id"]),
                bool(row["passed"]),
                str(row["detail"]),
            )
            for row in cases.to_dict("records")
        ]
        _suite(root, f"{name} cases", case_rows_)
    root.set("tests", str(sum(int(s.get("tests", "0")) for s in root)))
    root.set("failures", str(sum(int(s.get("failures", "0")) for s in root)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def case_rows(
    per_case: pd.DataFrame, min_case_rate: float | None, *, no_flaky: bool = False
) -> pd.DataFrame:
    """Per case and variant: passes when its rate is at least ``min_case_rate`` (or, with
    none, when it passed at least once) and, with ``no_flaky``, when it is not flaky.
    ``per_case`` is :func:`evalnb.rates` by variant and case; each detail ends with the
    case's flakiness verdict (:func:`evalnb.flakiness`)."""
    import pandas as pd

    from evalnb.analysis._flaky import FLAKY, case_verdicts

    scored = per_case[per_case["n"] > 0]
    rate = scored["k"] / scored["n"]
    if min_case_rate is None:
        passed = scored["k"] > 0
        rule = "passes at least once"
    else:
        passed = rate >= min_case_rate - 1e-12
        rule = f"rate >= {min_case_rate:g}"
    verdicts = case_verdicts(scored["k"], scored["n"], scored.get("incomplete", 0))
    if no_flaky:
        passed = passed & (verdicts != FLAKY)
        rule += ", not flaky"
    detail = [
        f"{k}/{n} passed ({r:.3f}); {rule}; {verdict} over {n} repeats"
        for k, n, r, verdict in zip(scored["k"], scored["n"], rate, verdicts, strict=True)
    ]
    return pd.DataFrame(
        {
            "variant": scored["variant"].astype(str).to_numpy(),
            "case_id": scored["case_id"].astype(str).to_numpy(),
            "passed": passed.to_numpy(),
            "verdict": verdicts,
            "detail": detail,
        }
    )


def _suite(root: ET.Element, name: str, rows: list[tuple[str, str, bool, str]]) -> None:
    failures = sum(not passed for _, _, passed, _ in rows)
    suite = ET.SubElement(
        root, "testsuite", name=name, tests=str(len(rows)), failures=str(failures), errors="0"
    )
    for classname, case_name, passed, detail in rows:
        case = ET.SubElement(suite, "testcase", classname=classname, name=case_name)
        if passed:
            ET.SubElement(case, "system-out").text = detail
        else:
            ET.SubElement(case, "failure", message=detail, type="evalnb.gate").text = detail


def show_progress(args: Any, stream: TextIO | None = None) -> bool:
    """``--progress`` forces the bar, ``--no-progress`` hides it; by default it is drawn
    only when stderr is a terminal, so a CI log is not flooded with redraws."""
    if getattr(args, "progress", False):
        return True
    if getattr(args, "no_progress", False):
        return False
    stream = stream or sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())
