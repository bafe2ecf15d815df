"""The sample Grafana dashboard in deploy/ is valid JSON, its panels are well formed, and every
metric it queries is one Strata exports (so a renamed metric cannot leave a panel empty)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from strata.bot.metrics import Metrics

DASHBOARD = Path(__file__).parents[2] / "deploy" / "grafana-dashboard.json"
METRIC = re.compile(r"\bstrata_[a-z_]+\b")


def exported_names() -> set[str]:
    names = set()
    for family in Metrics().registry.collect():
        names.add(family.name)
        for suffix in ("_total", "_bucket", "_count", "_sum", "_created"):
            names.add(family.name + suffix)
    return names


def test_the_dashboard_queries_only_exported_metrics() -> None:
    dash = json.loads(DASHBOARD.read_text(encoding="utf-8"))
    assert dash["title"] and dash["uid"] and dash["panels"]
    variables = {v["name"] for v in dash["templating"]["list"]}
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids))
    queried = set()
    for panel in dash["panels"]:
        assert panel["title"] and panel["type"] in ("timeseries", "stat", "gauge")
        assert {"h", "w", "x", "y"} <= set(panel["gridPos"])
        assert panel["datasource"]["uid"].strip("${}") in variables
        assert panel["targets"]
        for target in panel["targets"]:
            found = METRIC.findall(target["expr"])
            assert found, target["expr"]
            queried.update(found)
    assert queried <= exported_names(), queried - exported_names()
    # Turns, both latencies and tokens are on it: what an operator looks at first.
    for name in ("strata_turns_total", "strata_model_call_seconds_bucket",
                 "strata_recall_seconds_bucket", "strata_tokens_total"):
        assert name in queried
