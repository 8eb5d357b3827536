"""Reporting: tables, the generated reading, figures, the HTML report, the repro summary."""
