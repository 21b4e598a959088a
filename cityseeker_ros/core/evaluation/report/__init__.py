"""The run report: report.html and report.md (page.py) with its sections: tables, maps,
why episodes failed, the step viewer and what the agent saw."""
