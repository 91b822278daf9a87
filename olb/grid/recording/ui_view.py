"""What the MLflow UI opens on for an olb experiment: its runs table, flat, with the grid's data sets, parameters
and metrics as columns.

MLflow 3.17's UI keeps one switch per browser between its GenAI pages and its model-training pages, GenAI by
default, whatever the experiment's ``mlflow.experimentKind`` tag says; a page address with
``workflowType=machine_learning`` opens on the training runs instead. The columns, the order and the filter of
the runs table come from a saved view, an experiment tag ``mlflow.sharedViewState.<id>`` that the address names
(``viewStateShareKey``). olb writes one, :data:`VIEW_ID`, into every experiment it records, so that
:func:`runs_page` opens on the runs with what the grid measured, without a click.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable

VIEW_ID = "olb"
VIEW_TAG = f"mlflow.sharedViewState.{VIEW_ID}"  # the UI's prefix for a saved view
# ordered by end time, newest first: each invocation's parent run above the cells it ran (sorting by anything but
# the start time also lists the cells flat, rather than folded under their parent run)
VIEW_ORDER = "attributes.`end_time`"


def runs_page(experiment_id: str) -> str:
    """The UI's address (after the server's) of an experiment's runs table in olb's view."""
    return f"#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_ID}&workflowType=machine_learning"


def runs_view(params: Iterable[str], metrics: Iterable[str], now_ms: int | None = None) -> str:
    """The saved view's tag value: the runs table with the data set, then ``params`` and ``metrics`` as columns."""
    columns = ["attributes.`Dataset`", *(f"params.`{p}`" for p in params), *(f"metrics.`{m}`" for m in metrics)]
    state = {"selectedColumns": list(dict.fromkeys(columns)), "orderByKey": VIEW_ORDER, "orderByAsc": False}
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return json.dumps({"name": "olb: cells", "createdAt": now, "updatedAt": now, "state": json.dumps(state)})
