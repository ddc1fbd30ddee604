"""Capacity stage: who really gets what, for the whole policy (`hetgitops capacity`).

Takes a loaded `Policy` and gives a `CapacityReport` (`run.py`): per team x pool x resource
the `plan.entitlement` rows, per team the monthly cost of its nominal quota against its budget,
per card type the physical cards against what teams hold; laid out as text, JSON, CSV and
Markdown (`formats.py`) or one static HTML page with charts (`html.py`). A command of its own,
not a question about one job: it shares no code with explain, only plan/'s arithmetic and
validate's budget pricing (checks/), so it sits beside explain, above checks.
"""
