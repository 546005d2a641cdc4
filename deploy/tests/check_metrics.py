#!/usr/bin/env python3
"""Checks that every metric the dashboards and the alert rules query exists.

Starts kagentd (every service in one process, one CPU worker), submits a job and cancels it
(so the gRPC, submission and finish families appear), scrapes /metrics, and checks every
PromQL expression in deploy/grafana/*.json and deploy/prometheus/rules.yaml:

  * every metric name is a family of the scrape (a histogram's _bucket/_sum/_count map to
    the histogram; _bucket only on histograms), or one of the families that appear only after
    events (a round, a measurement) which the sources register with prometheus-cpp: those are
    checked against the sources (name and type) and listed;
  * every label a matcher, a `by (...)` or `without (...)` names exists on that metric (in
    the scrape, or in the source's Add({{"label", ...}}) calls), or is one the scrape adds
    (namespace, pod, component, ... from the chart's ServiceMonitor);
  * no other identifier appears (so a misspelt metric is not taken for a function).

Python standard library only. Usage:
  check_metrics.py --kagentd PATH --kagent PATH --source-root DIR [--keep-going]
  check_metrics.py --scrape FILE --source-root DIR      (check against a saved scrape)
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

# Labels Prometheus or the chart's ServiceMonitor put on every series of a target.
TARGET_LABELS = {"namespace", "pod", "container", "endpoint", "service", "job", "instance",
                 "component", "worker_pool"}
# Series Prometheus makes itself.
SYNTHETIC = {"up": set(), "scrape_duration_seconds": set(), "scrape_samples_scraped": set()}

FUNCTIONS = {
    "abs", "absent", "absent_over_time", "avg_over_time", "ceil", "changes", "clamp", "clamp_max",
    "clamp_min", "count_over_time", "day_of_month", "day_of_week", "delta", "deriv", "exp",
    "floor", "histogram_quantile", "holt_winters", "hour", "idelta", "increase", "irate",
    "label_join", "label_replace", "last_over_time", "ln", "log2", "log10", "max_over_time",
    "min_over_time", "minute", "month", "predict_linear", "quantile_over_time", "rate", "resets",
    "round", "scalar", "sgn", "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time",
    "sum_over_time", "time", "timestamp", "vector", "year", "label_values", "query_result",
    "present_over_time",
}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile"}
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
            "bool", "offset", "inf", "nan", "le"}


# --------------------------------------------------------------------------------------
# Expressions

def dashboard_exprs(path):
    """Every PromQL string of a dashboard: panel targets and query variables."""
    with open(path) as f:
        d = json.load(f)
    out = []

    def walk(node, where):
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "expr" and isinstance(v, str):
                    out.append((where, v))
                elif k == "query" and isinstance(v, str) and where.endswith("templating"):
                    out.append((where, v))
                else:
                    walk(v, where if k not in ("templating",) else where + ":templating")
        elif isinstance(node, list):
            for x in node:
                walk(x, where)
    walk(d.get("panels", []), os.path.basename(path))
    for var in d.get("templating", {}).get("list", []):
        q = var.get("query")
        if isinstance(q, dict):
            q = q.get("query")
        if var.get("type") == "query" and isinstance(q, str):
            out.append((os.path.basename(path) + ":$" + var.get("name", "?"), q))
    return out


def rules_exprs(path):
    """`expr:` values of a rules file (plain or folded/literal block scalars), no YAML library."""
    lines = open(path).read().split("\n")
    out = []
    i = 0
    alert = "?"
    while i < len(lines):
        line = lines[i]
        m = re.match(r"^(\s*)-?\s*(alert|record):\s*(\S+)", line)
        if m:
            alert = m.group(3)
        m = re.match(r"^(\s*)(?:-\s*)?expr:\s*(.*)$", line)
        if m:
            indent, value = len(m.group(1)), m.group(2).strip()
            if value in ("|", ">", "|-", ">-", "|+", ">+"):
                block = []
                i += 1
                while i < len(lines) and (lines[i].strip() == "" or
                                          len(lines[i]) - len(lines[i].lstrip()) > indent):
                    block.append(lines[i].strip())
                    i += 1
                out.append((os.path.basename(path) + ":" + alert, " ".join(block)))
                continue
            if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
                value = value[1:-1]
            out.append((os.path.basename(path) + ":" + alert, value))
        i += 1
    return out


def analyse(expr):
    """(metrics, labels per metric, labels used in by/without/on, unknown identifiers)."""
    e = re.sub(r"\$\{[^}]*\}|\$__\w+|\$\w+", "1m", expr)          # Grafana variables
    # Grafana's label_values(METRIC, LABEL) reads LABEL of METRIC.
    e = re.sub(r"label_values\(\s*(.+?)\s*,\s*(\w+)\s*\)\s*$", r"group by (\2) (\1)", e)
    metrics, matcher_labels, grouping, unknown = [], {}, set(), set()
    # Selectors with matchers: name{a="x", b=~"y"}
    def sel(m):
        name = m.group(1) or ""
        labels = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)\s*\"", m.group(2)))
        if name:
            matcher_labels.setdefault(name, set()).update(labels)
        else:
            unknown.add("{...} without a metric name")
        return " " + name + " "
    e = re.sub(r"([A-Za-z_:][A-Za-z0-9_:]*)?\s*\{([^}]*)\}", sel, e)
    e = re.sub(r"\"(?:[^\"\\]|\\.)*\"", " ", e)                       # other strings
    for m in re.finditer(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        grouping.update(x.strip() for x in m.group(2).split(",") if x.strip())
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)                                  # ranges, subqueries
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        rest = e[m.end():].lstrip()
        if word in KEYWORDS or re.fullmatch(r"\d+[smhdwy]", word):
            continue
        if rest.startswith("("):
            if word not in FUNCTIONS and word not in AGGREGATIONS:
                unknown.add(word + "()")
            continue
        if word in AGGREGATIONS:  # `sum by (x) (...)`: by(...) was removed above
            continue
        metrics.append(word)
    for name in list(matcher_labels):
        if name not in metrics:
            metrics.append(name)
    return metrics, matcher_labels, grouping, unknown


# --------------------------------------------------------------------------------------
# What exists

def parse_scrape(text):
    """{family: (type, {labels})} from the Prometheus text format."""
    fams, sample_labels = {}, {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            fams[m.group(1)] = m.group(2)
            continue
        if not line or line.startswith("#"):
            continue
        m = re.match(r"([A-Za-z_:][A-Za-z0-9_:]*)(\{([^}]*)\})?", line)
        if m:
            labels = set(re.findall(r"([A-Za-z_][A-Za-z0-9_]*)=\"", m.group(3) or ""))
            sample_labels.setdefault(m.group(1), set()).update(labels)
    out = {}
    for fam, typ in fams.items():
        labels = set()
        names = [fam] + ([fam + s for s in ("_bucket", "_sum", "_count")] if typ in ("histogram", "summary") else [])
        for n in names:
            labels |= sample_labels.get(n, set())
        labels.discard("le")
        labels.discard("quantile")
        out[fam] = (typ, labels)
    return out


def source_families(root):
    """{family: (type, {labels}, file)} registered with prometheus-cpp in the sources. A
    family's labels are those of its variable's Add({{"label", ...}}) calls in any source
    file (a metric is often registered in one file and recorded in another)."""
    out = {}
    files = []
    for top in ("common", "kernel_model", "services", "tools", "engines"):
        files += glob.glob(os.path.join(root, top, "**", "*.cc"), recursive=True)
    texts = {path: open(path, errors="replace").read()
             for path in files if not path.endswith("_test.cc")}
    everything = "\n".join(texts.values())
    for path, text in texts.items():
        for m in re.finditer(r"(\w+)\s*=\s*&?\s*prometheus::Build(Counter|Gauge|Histogram|Summary)\(\)\s*"
                             r"\.Name\(\"(kagent_\w+)\"\)", text):
            var, typ, fam = m.group(1), m.group(2).lower(), m.group(3)
            labels = set()
            for a in re.finditer(r"\b" + re.escape(var) + r"\s*(?:->|\.)\s*Add\(\s*\{(\{.*?\})\s*\}",
                                 everything):
                labels |= set(re.findall(r"\{\s*\"(\w+)\"\s*,", a.group(1)))
            prev = out.get(fam)
            out[fam] = (typ, labels | (prev[1] if prev else set()), os.path.relpath(path, root))
        for m in re.finditer(r"\.Name\(\"(kagent_\w+)\"\)", text):
            if m.group(1) not in out:
                out[m.group(1)] = ("unknown", set(), os.path.relpath(path, root))
    return out


def resolve(name, fams):
    """The family a series name belongs to, or None."""
    if name in fams:
        typ = fams[name][0]
        return name if typ not in ("histogram", "summary") else None
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            base = name[: -len(suffix)]
            if base in fams and fams[base][0] in ("histogram", "summary"):
                if suffix == "_bucket" and fams[base][0] != "histogram":
                    return None
                return base
    return None


# --------------------------------------------------------------------------------------
# kagentd

def scrape_kagentd(kagentd, kagent, problem_dir):
    tmp = tempfile.mkdtemp(prefix="kagent-metrics-")
    out_path = os.path.join(tmp, "out.txt")
    with open(out_path, "w") as out, open(os.path.join(tmp, "err.txt"), "w") as err:
        proc = subprocess.Popen([kagentd, "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                 "--gpus=cpu", "--db=" + os.path.join(tmp, "k.db"),
                                 "--drain-seconds=0", "--shutdown-grace-seconds=1"],
                                stdout=out, stderr=err, start_new_session=True)
    try:
        info = None
        deadline = time.time() + 60
        while time.time() < deadline and info is None:
            if proc.poll() is not None:
                raise RuntimeError("kagentd exited: " + open(os.path.join(tmp, "err.txt")).read()[-2000:])
            for line in open(out_path).read().splitlines():
                if '"metrics_port"' in line:
                    info = json.loads(line)
            time.sleep(0.2)
        if info is None:
            raise RuntimeError("kagentd printed no ports within 60 s")
        server = "127.0.0.1:%d" % info["port"]
        if kagent:
            env = dict(os.environ, KAGENT_SERVER=server)
            sub = subprocess.run([kagent, "submit", os.path.join(problem_dir, "problem.py"),
                                  "--kernel", os.path.join(problem_dir, "start_kernel.py"),
                                  "--rounds", "1", "--beam", "1", "--workers", "1"],
                                 env=env, capture_output=True, text=True, timeout=60)
            m = re.search(r"job-[0-9a-f]+", sub.stdout + sub.stderr)
            if sub.returncode != 0 or not m:
                raise RuntimeError("kagent submit failed: " + sub.stdout + sub.stderr)
            subprocess.run([kagent, "cancel", m.group(0)], env=env, capture_output=True, timeout=60)
            subprocess.run([kagent, "list"], env=env, capture_output=True, timeout=60)
        url = "http://127.0.0.1:%d/metrics" % info["metrics_port"]
        return urllib.request.urlopen(url, timeout=10).read().decode()
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def check(exprs, scraped, sources, problems):
    """Appends the problems of exprs; returns (families used, families checked against the sources)."""
    after_events = set()
    used = set()
    for where, expr in exprs:
        metrics, matcher_labels, grouping, unknown = analyse(expr)
        for u in unknown:
            problems.append("%s: unknown function or construct %s in %r" % (where, u, expr))
        if not metrics:
            problems.append("%s: no metric in %r" % (where, expr))
        labels_available = set(TARGET_LABELS)
        for name in metrics:
            if name in SYNTHETIC:
                labels_available |= SYNTHETIC[name]
                continue
            fam = resolve(name, scraped)
            if fam is not None:
                labels = scraped[fam][1] | (sources.get(fam, ("", set()))[1])
            else:
                fam = resolve(name, sources)
                if fam is None:
                    problems.append("%s: metric %s exists neither in the scrape nor in the sources" % (where, name))
                    continue
                after_events.add(fam)
                labels = sources[fam][1]
            used.add(fam)
            if name.endswith("_bucket"):
                labels = labels | {"le"}
            labels_available |= labels
            for l in matcher_labels.get(name, set()):
                if l not in labels and l not in TARGET_LABELS:
                    problems.append("%s: %s has no label %r (has %s)" % (where, name, l, sorted(labels)))
        for l in grouping:
            if l not in labels_available:
                problems.append("%s: grouping label %r is on none of %s" % (where, l, metrics))

    return used, after_events


SELF_TEST = [
    ('sum(kagent_gpu_queue_dept)', 'neither in the scrape'),
    ('sum by (wrkr) (kagent_gpu_workers)', "grouping label 'wrkr'"),
    ('kagent_gpu_workers{stat="down"}', "no label 'stat'"),
    ('kagent_jobs_submitted_total_bucket', 'neither in the scrape'),
    ('histogram_quantil(0.5, kagent_gpu_task_seconds_bucket)', 'unknown function'),
    ('sum(rate(kagent_rounds_totl[5m]))', 'neither in the scrape'),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kagentd")
    ap.add_argument("--kagent")
    ap.add_argument("--scrape", help="a saved /metrics text instead of starting kagentd")
    ap.add_argument("--source-root", required=True)
    args = ap.parse_args()
    root = args.source_root

    if args.scrape:
        text = open(args.scrape).read()
    else:
        text = scrape_kagentd(args.kagentd, args.kagent, os.path.join(root, "examples/matvec_small"))
    scraped = parse_scrape(text)
    sources = source_families(root)
    print("scrape: %d kagent families; sources: %d families" % (
        sum(1 for f in scraped if f.startswith("kagent_")), len(sources)))
    # Every scraped kagent family comes from the sources (the source parser works).
    problems = []
    for fam in scraped:
        if fam.startswith("kagent_") and fam not in sources:
            problems.append("scraped family %s not found in the sources (source parser out of date?)" % fam)

    exprs = []
    for path in sorted(glob.glob(os.path.join(root, "deploy/grafana/*.json"))):
        exprs += dashboard_exprs(path)
    exprs += rules_exprs(os.path.join(root, "deploy/prometheus/rules.yaml"))
    if len(exprs) < 10:
        problems.append("only %d expressions found: the extractor is broken" % len(exprs))

    used, after_events = check(exprs, scraped, sources, problems)
    # The checker itself: each broken expression must be refused.
    for expr, want in SELF_TEST:
        found = []
        check([("self-test", expr)], scraped, sources, found)
        if not any(want in f for f in found):
            problems.append("self-test: %r was not refused with %r (got %s)" % (expr, want, found))
    for fam in sorted(after_events):
        typ, labels, path = sources[fam]
        print("checked against the sources (appears after events): %s (%s, labels %s, %s)" % (
            fam, typ, sorted(labels), path))
    print("families used: %d of %d" % (len(used), len(sources)))
    unused = sorted(set(sources) - used)
    if unused:
        print("families no dashboard or rule uses: " + ", ".join(unused))
    if problems:
        for p in problems:
            print("FAIL: " + p)
        return 1
    print("check_metrics: ok (%d expressions)" % len(exprs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
