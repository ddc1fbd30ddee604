"""Compile stage, `jobs`: the rule the job-template compiler reports, registered without Jinja2,
so the rule catalog (SARIF, `hetgitops rules`) does not import the template engine into every
`validate` and `render` process."""

from __future__ import annotations

from hetgitops.diagnostics import register_rules

TEMPLATE_RULE = "job-template"
register_rules(
    "jobs",
    {
        TEMPLATE_RULE: "`jobs`: a job template did not render one valid object (template "
        "error, invalid YAML, or an input the policy lacks, such as the profile's image).\n"
        "A template that takes more than 10 s is stopped once per run: its other jobs are "
        "not rendered and are listed under that finding.\n"
        "Fix: correct the template at the reported line, or add the missing policy field.",
    },
)
