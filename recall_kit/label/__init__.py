"""`recall-kit label`: a local page where a person grades the pairs that decide a study's verdicts.

session.py holds what is labelled; order.py the order the pairs are offered in; view.py what the
page shows, as JSON; server.py the page's small closed server; static/ the page itself. The
assessor's file is recall_kit/curate/assessor.py's; the study reads the labels through
recall_kit/study/people.py.
"""

from __future__ import annotations

from recall_kit.lazy import lazy_attributes

_LAZY = {
    "LabelSession": "recall_kit.label.session",
    "open_session": "recall_kit.label.session",
    "AssessorFile": "recall_kit.curate.assessor",
    "LabelServer": "recall_kit.label.server",
    "serve": "recall_kit.label.server",
}

__getattr__ = lazy_attributes(__name__, _LAZY)

__all__ = ["AssessorFile", "LabelServer", "LabelSession", "open_session", "serve"]
