#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The alerts' parameters (deploy/prometheus/rule-parameters.yml) against the rules and the
dashboards:
  - each threshold's rule (alert or recording rule) holds its `rule_text` (whitespace aside),
    and that text compares with its `value`; its panel_metrics are named in the text;
  - every time-series panel of dashboards/*.json that reads one of a threshold's panel_metrics
    draws it: a threshold step at its value in its colour, shown as a line; every threshold is
    drawn by at least one panel;
  - no rule names a fixed DaemonSet: every `daemonset` matcher is `=~` the parameters'
    daemonset_regex;
  - the fleet and job views have an alert list.
Each check is proven to fail: self_test() breaks a copy once per check and expects its complaint.
Exits 1 with one line per problem.
"""
import copy
import json
import os
import pathlib
import re
import sys

import yaml

SOURCE = pathlib.Path(os.environ.get("EFAWATCH_SOURCE_DIR", pathlib.Path(__file__).parents[3]))
METRIC_RE = re.compile(r"efawatch[:_][A-Za-z0-9_:]+")
LINE_MODES = ("line", "dashed", "line+area", "dashed+area")


def flat(text):
    return " ".join(text.split())


def check(params, rules, boards):
    errs = []
    by_name = {}
    for g in rules["groups"]:
        for r in g["rules"]:
            by_name.setdefault(r.get("alert") or r.get("record"), []).append(r)
    for t in params["thresholds"]:
        where = by_name.get(t["rule"])
        if not where:
            errs.append(f"threshold {t['name']}: no rule {t['rule']}")
            continue
        if not any(flat(t["rule_text"]) in flat(r["expr"]) for r in where):
            errs.append(f"threshold {t['name']}: {t['rule']} does not hold `{t['rule_text']}` "
                        f"(change rule-parameters.yml and the rule together)")
        numbers = [float(n) for n in re.findall(r"(?<![\w:.\[])(\d+(?:\.\d+)?)(?![\w\]])",
                                                t["rule_text"])]
        if float(t["value"]) not in numbers:
            errs.append(f"threshold {t['name']}: value {t['value']} is not in `{t['rule_text']}`")
        for m in t["panel_metrics"]:
            if m not in t["rule_text"]:
                errs.append(f"threshold {t['name']}: panel metric {m} is not in its rule_text")
    drawn = set()
    for name, d in boards.items():
        for p in d["panels"]:
            if p["type"] != "timeseries":
                continue
            read = {m for q in p["targets"] for m in METRIC_RE.findall(q["expr"])}
            defaults = p["fieldConfig"]["defaults"]
            steps = {(s["value"], s["color"]) for s in defaults.get("thresholds", {}).get("steps", [])}
            mode = defaults.get("custom", {}).get("thresholdsStyle", {}).get("mode")
            for t in params["thresholds"]:
                if not read & set(t["panel_metrics"]):
                    continue
                drawn.add(t["name"])
                if (t["value"], t["colour"]) not in steps:
                    errs.append(f"{name}: panel '{p['title']}' reads {sorted(read & set(t['panel_metrics']))} "
                                f"but does not draw threshold {t['name']} ({t['value']}, {t['colour']})")
                elif mode not in LINE_MODES:
                    errs.append(f"{name}: panel '{p['title']}' does not show its thresholds as lines")
    for t in params["thresholds"]:
        if t["name"] not in drawn:
            errs.append(f"threshold {t['name']}: no time-series panel reads {t['panel_metrics']}")
    want = f'daemonset=~"{params["daemonset_regex"]}"'
    for g in rules["groups"]:
        for r in g["rules"]:
            for m in re.findall(r'daemonset\s*(?:=~|!=|!~|=)\s*"[^"]*"', r["expr"]):
                if flat(m).replace(" ", "") != want:
                    errs.append(f"{r.get('alert') or r.get('record')}: {m} is not {want} "
                                "(rule-parameters.yml daemonset_regex)")
    for name in ("efawatch-fleet.json", "efawatch-job.json"):
        if not any(p["type"] == "alertlist" for p in boards.get(name, {}).get("panels", [])):
            errs.append(f"{name}: no alert list panel")
    return errs


def self_test(params, rules, boards):
    """Each breakage must be reported."""
    failures = []

    def expect(what, fragment, params_=params, rules_=rules, boards_=boards):
        got = check(params_, rules_, boards_)
        if not any(fragment in e for e in got):
            failures.append(f"self-test: {what} not reported (got {got})")

    p = copy.deepcopy(params)
    p["thresholds"][0]["value"] = 0.07
    expect("a value the rule does not use", "is not in", params_=p)
    p = copy.deepcopy(params)
    p["thresholds"][0]["rule_text"] = p["thresholds"][0]["rule_text"].replace(
        str(p["thresholds"][0]["value"]), "0.07")
    p["thresholds"][0]["value"] = 0.07
    expect("a rule that disagrees with the parameters", "does not hold", params_=p)
    b = copy.deepcopy(boards)
    for d in b.values():
        for panel in d["panels"]:
            panel.get("fieldConfig", {}).get("defaults", {}).pop("thresholds", None)
    expect("a panel without its threshold", "does not draw threshold", boards_=b)
    b = copy.deepcopy(boards)
    for d in b.values():
        for panel in d["panels"]:
            panel.get("fieldConfig", {}).get("defaults", {}).pop("custom", None)
    expect("thresholds not drawn as lines", "as lines", boards_=b)
    r = copy.deepcopy(rules)
    r["groups"][-1]["rules"].append({"alert": "X", "expr": 'kube_daemonset_labels{daemonset="efawatch"}'})
    expect("a fixed DaemonSet", "is not daemonset=~", rules_=r)
    b = copy.deepcopy(boards)
    b["efawatch-job.json"]["panels"] = [x for x in b["efawatch-job.json"]["panels"]
                                        if x["type"] != "alertlist"]
    expect("a missing alert list", "no alert list", boards_=b)
    return failures


def main():
    params = yaml.safe_load((SOURCE / "deploy/prometheus/rule-parameters.yml").read_text())
    rules = yaml.safe_load((SOURCE / "deploy/prometheus/efawatch-rules.yml").read_text())
    boards = {p.name: json.loads(p.read_text()) for p in sorted((SOURCE / "dashboards").glob("*.json"))}
    errs = check(params, rules, boards) + self_test(params, rules, boards)
    for e in errs:
        print(e, file=sys.stderr)
    if errs:
        return 1
    n = sum(1 for d in boards.values() for p in d["panels"]
            if p["type"] == "timeseries" and p["fieldConfig"]["defaults"].get("thresholds"))
    print(f"{len(params['thresholds'])} thresholds: rules hold them, {n} time-series panels draw "
          "them; DaemonSets by pattern; alert lists present; 6 broken copies each rejected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
