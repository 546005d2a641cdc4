#!/usr/bin/env python3
"""Checks that the C++ include graph follows the project's layers (docs/architecture.md).

Layers, lowest first; a file may include its own layer and the ones below it:

    0  common/          status, logging, options, server bootstrap, storage, subprocess, LLM
                        clients, the harness client (the generated protocol, kagent/v1/,
                        sits below every layer)
    1  kernel_model/    the vocabulary: metric names and aggregation, GPU specs, roofline,
                        bottleneck categories, the profile view, op recognition
    2  engines/         the brains behind engines/*.h (the interfaces)
    3  services/        one folder per service
    4  tools/           kagent, kagentd, kagent-loadtest
    5  tests/           integration tests

Within a layer:
  - engines/<a>/ may include the interfaces at the top of engines/ but nothing of engines/<b>/;
  - services/<a>/ may include of services/<b>/ only b's public surface: <b>_service.h and
    <b>_setup.h (how to construct and serve b) plus the headers listed in PUBLIC below;
    everything else of a service is its internals;
  - a service reaches a brain through the interfaces at the top of engines/; only its
    composition files (*_setup.h, *_setup.cc, main.cc) may name an implementation in
    engines/<x>/ to construct it.
Unit tests (*_test.cc) and test helpers (a testing/ folder, test_*.h) never include a
higher layer either; within their layer they may wire real components of other folders
together (a judge-made report into the analyzer, a brain into the optimization manager),
so the within-layer rules above bind production code only.

Exit status 0 when the graph is clean, 1 with one line per offending include otherwise.

It also draws the graph it checked: one box per folder (common/ split into its
subfolders), one band per layer, an arrow for every folder that includes another (red
when the include breaks a rule). docs/architecture-layers.svg is that picture;
--svg FILE writes it, --check-svg FILE fails when FILE is not what the code draws today.

Usage: scripts/check_layers.py [--svg FILE | --check-svg FILE] [ROOT]
"""

import html
import os
import re
import sys

LAYERS = {"common": 0, "kernel_model": 1, "engines": 2, "services": 3,
          "tools": 4, "tests": 5}
# Third-party and generated headers that sit outside the layers.
# The generated protocol (kagent/v1/*.pb.h) is below every layer.
EXTERNAL = {"absl", "grpc", "grpcpp", "google", "nlohmann", "prometheus", "catch2",
            "proto", "kagent"}
# A service's headers that other services may include besides <name>_service.h and
# <name>_setup.h, each with the reason it is public.
PUBLIC = {
    # The GPU gate a profile waits on: the benchmark worker, which owns the GPU slot,
    # implements it so that one GPU serves measurements and profiles in turn.
    "services/profiler/profile_gate.h",
}
SOURCE_DIRS = ("common", "kernel_model", "engines", "services", "tools", "tests")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def component(path):
    """The (layer, unit) a repository path belongs to, or None outside the layers."""
    parts = path.split("/")
    top = parts[0]
    if top not in LAYERS:
        return None
    if top in ("engines", "services") and len(parts) > 2:
        return LAYERS[top], "/".join(parts[:2])
    return LAYERS[top], top


def is_test(path):
    name = os.path.basename(path)
    return (name.endswith("_test.cc") or name.startswith("test_") or
            "/testing/" in path or path.startswith("tests/"))


def is_composition(path):
    name = os.path.basename(path)
    return name in ("main.cc",) or re.search(r"_setup\.(h|cc)$", name) is not None


def public_to_other_services(header):
    parts = header.split("/")
    if len(parts) != 3:
        return False
    name = parts[1]
    return (parts[2] in (f"{name}_service.h", f"{name}_setup.h") or header in PUBLIC)


def violation(src, header):
    """Why `src` must not include `header`, or None when it may."""
    if header.split("/")[0] in EXTERNAL:
        return None
    to = component(header)
    if to is None:
        return None
    frm = component(src)
    if frm is None:
        return None
    (src_layer, src_unit), (dst_layer, dst_unit) = frm, to
    if dst_layer > src_layer:
        return f"layer {src_layer} ({src_unit}) includes layer {dst_layer} ({dst_unit})"
    if (src_unit.startswith("services/") and dst_unit.startswith("engines/") and
            not is_composition(src) and not is_test(src)):
        return f"{src_unit} names a brain's implementation outside its composition files"
    if dst_layer < src_layer or src_unit == dst_unit:
        return None
    if is_test(src):
        return None
    if header.startswith("engines/") and header.count("/") == 1:
        return None  # the engine interfaces at the top of engines/
    if header.startswith("services/") and public_to_other_services(header):
        return None
    return f"{src_unit} reaches into the internals of {dst_unit}"


def sources(root):
    for top in SOURCE_DIRS:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            for name in files:
                if name.endswith((".h", ".cc", ".inc")):
                    full = os.path.join(dirpath, name)
                    yield os.path.relpath(full, root).replace(os.sep, "/"), full


def box(path):
    """The box of the picture a file is drawn in: its component, with common/ split."""
    parts = path.split("/")
    if parts[0] == "common" and len(parts) > 2:
        return "common/" + parts[1]
    return component(path)[1]


def draw_svg(boxes, edges):
    """An SVG of `boxes` ({name: layer}) in one band per layer, highest on top, and
    `edges` ({(from, to): ok}) as arrows. Deterministic: same graph, same bytes."""
    names = {0: "common", 1: "kernel model", 2: "engines", 3: "services", 4: "tools",
             5: "tests"}
    layers = sorted({layer for layer in boxes.values()}, reverse=True)
    width, band, bw, bh = 1500, 110, 190, 34
    height = band * len(layers) + 20
    pos = {}
    for row, layer in enumerate(layers):
        members = sorted(b for b, l in boxes.items() if l == layer)
        step = (width - 140) / max(len(members), 1)
        for i, b in enumerate(members):
            pos[b] = (130 + step * i + (step - bw) / 2, 20 + row * band + (band - bh) / 2)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           '<defs><marker id="a" markerWidth="8" markerHeight="8" refX="7" refY="4" '
           'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#667"/></marker>'
           '<marker id="r" markerWidth="8" markerHeight="8" refX="7" refY="4" '
           'orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#c22"/></marker></defs>',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for row, layer in enumerate(layers):
        y = 20 + row * band
        fill = "#f4f6fa" if row % 2 == 0 else "#e9edf4"
        out.append(f'<rect x="0" y="{y}" width="{width}" height="{band}" fill="{fill}"/>')
        out.append(f'<text x="12" y="{y + band / 2 + 4}" font-weight="bold">'
                   f'{layer} {html.escape(names.get(layer, ""))}</text>')
    for (a, b), ok in sorted(edges.items()):
        (ax, ay), (bx, by) = pos[a], pos[b]
        x1, x2 = ax + bw / 2, bx + bw / 2
        colour, marker = ("#99a", "a") if ok else ("#c22", "r")
        if abs(ay - by) < 1:  # same band: an arc above the boxes
            mid = (x1 + x2) / 2
            lift = 18 + abs(x2 - x1) / 12
            d = f"M{x1:.0f},{ay:.0f} Q{mid:.0f},{ay - lift:.0f} {x2:.0f},{by:.0f}"
        elif ay < by:  # down to a lower layer
            d = f"M{x1:.0f},{ay + bh:.0f} L{x2:.0f},{by:.0f}"
        else:
            d = f"M{x1:.0f},{ay:.0f} L{x2:.0f},{by + bh:.0f}"
        out.append(f'<path d="{d}" fill="none" stroke="{colour}" stroke-width="1" '
                   f'opacity="0.8" marker-end="url(#{marker})"/>')
    for b, (x, y) in sorted(pos.items()):
        label = {"engines": "engines/*.h", "common": "common/*.h"}.get(b, b + "/")
        out.append(f'<rect x="{x:.0f}" y="{y:.0f}" width="{bw}" height="{bh}" rx="5" '
                   'fill="white" stroke="#334"/>')
        out.append(f'<text x="{x + bw / 2:.0f}" y="{y + bh / 2 + 4:.0f}" font-size="11" '
                   f'text-anchor="middle">{html.escape(label)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    args = argv[1:]
    svg_out = check_svg = None
    if args and args[0] in ("--svg", "--check-svg"):
        if len(args) < 2:
            print(f"check_layers: {args[0]} needs a file", file=sys.stderr)
            return 2
        if args[0] == "--svg":
            svg_out = args[1]
        else:
            check_svg = args[1]
        args = args[2:]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    bad = []
    checked = 0
    boxes, edges = {}, {}
    for rel, full in sorted(sources(root)):
        with open(full, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if not is_test(rel):
            boxes[box(rel)] = component(rel)[0]
        for match in INCLUDE.finditer(text):
            header = match.group(1)
            checked += 1
            why = violation(rel, header)
            if why:
                line = text.count("\n", 0, match.start()) + 1
                bad.append(f"{rel}:{line}: includes {header}: {why}")
            to = component(header) if header.split("/")[0] not in EXTERNAL else None
            if to is not None and not is_test(rel) and os.path.exists(
                    os.path.join(root, header)) and box(rel) != box(header):
                key = (box(rel), box(header))
                edges[key] = edges.get(key, True) and why is None
    for line in bad:
        print(line)
    print(f"check_layers: {checked} includes checked, {len(bad)} against the layers")
    status = 1 if bad else 0
    if svg_out or check_svg:
        svg = draw_svg(boxes, {e: ok for e, ok in edges.items() if e[0] in boxes and e[1] in boxes})
        if svg_out:
            with open(svg_out, "w", encoding="utf-8") as f:
                f.write(svg)
        else:
            try:
                with open(check_svg, encoding="utf-8") as f:
                    current = f.read()
            except OSError:
                current = None
            if current != svg:
                print(f"check_layers: {check_svg} is not what the code draws today; "
                      f"run scripts/check_layers.py --svg {check_svg}")
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv))
