"""The HTML report: one self-contained page per run, comparison, pairwise study and
calibration study (see :mod:`harness.report.html.page`)."""
