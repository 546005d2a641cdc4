#!/usr/bin/env python3
"""Regenerates the per-template sections of docs/templates.md from the templates' JSON.

  scripts/gen_templates_doc.py           # rewrite docs/templates.md in place
  scripts/gen_templates_doc.py --check   # exit 1 when the committed doc is stale

Each template (engines/heuristic/templates/<id>.json) has a section under "## Templates",
in id order: its heading (id and title), op class (and language, for a CUDA template) and
dtypes, architecture, conditions of use (plus the max_tile_elements bound) and the params
table. That part is generated; any
prose a section carries after its table (hand-written notes on how the brain uses it) is
kept as it is. Everything outside "## Templates" is left alone.
"""
import argparse
import glob
import json
import os
import re
import sys

from doc_output import write_or_check

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
TEMPLATES = os.path.join(ROOT, "engines", "heuristic", "templates")
HEADING = re.compile(r"^### `([a-z0-9_]+)` — ")


def _range(spec):
    if spec.get("type") == "choice":
        return ", ".join(str(v) for v in spec.get("allowed", []))
    if "min" in spec or "max" in spec:
        return "[{}, {}]".format(spec.get("min", ""), spec.get("max", ""))
    return ""


def _cell(text):
    return str(text).replace("|", "\\|")


def generated_block(meta):
    """The generated lines of one template's section, heading through the params table."""
    lines = ["### `{}` — {}".format(meta["id"], meta["title"]), "",
             "op class `{}`; {}dtypes {}.".format(
                 meta["op_class"],
                 "language `cuda` (CUDA C++ built with load_inline); "
                 if meta.get("language", "triton") == "cuda" else "",
                 ", ".join(meta["dtypes"])), "",
             meta["architecture"], "", "Conditions of use:", ""]
    lines += ["* " + c for c in meta["conditions"]]
    if meta.get("max_tile_elements"):
        lines.append("* product of the BLOCK_* knobs at most {}".format(meta["max_tile_elements"]))
    lines += ["", "| param | kind | type | range / allowed | default | meaning |",
              "|---|---|---|---|---|---|"]
    for name, spec in meta["params"].items():
        lines.append("| `{}` | {} | {} | {} | `{}` | {} |".format(
            name, spec.get("kind", ""), spec.get("type", ""), _cell(_range(spec)),
            spec.get("default", ""), _cell(spec.get("doc", ""))))
    return lines


def split_sections(lines):
    """(head, {id: prose lines after the table}, tail) of the doc's "## Templates" part."""
    start = lines.index("## Templates")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
    body = lines[start + 1:end]
    first = next((i for i, l in enumerate(body) if HEADING.match(l)), len(body))
    head = lines[:start + 1] + body[:first]
    prose = {}
    i = first
    while i < len(body):
        tid = HEADING.match(body[i]).group(1)
        j = i + 1
        while j < len(body) and not HEADING.match(body[j]):
            j += 1
        section = body[i:j]
        last_row = max((k for k, l in enumerate(section) if l.startswith("|")), default=len(section) - 1)
        prose[tid] = section[last_row + 1:]
        i = j
    return head, prose, lines[end:]


def render(doc_text):
    lines = doc_text.split("\n")
    head, prose, tail = split_sections(lines)
    out = list(head)
    for path in sorted(glob.glob(os.path.join(TEMPLATES, "*.json"))):
        with open(path, encoding="utf-8") as f:
            meta = json.load(f)
        out += generated_block(meta)
        out += prose.get(meta["id"], [""])
    return "\n".join(out + tail)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc", default=os.path.join(ROOT, "docs", "templates.md"))
    parser.add_argument("--check", action="store_true",
                        help="do not write; exit 1 when --doc differs from the generated text")
    args = parser.parse_args()
    with open(args.doc, encoding="utf-8") as f:
        current = f.read()
    return write_or_check(args.doc, render(current), args.check, "scripts/gen_templates_doc.py")


if __name__ == "__main__":
    sys.exit(main())
