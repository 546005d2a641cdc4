#!/usr/bin/env python3
"""A loopback OpenAI-shaped (vLLM-shaped) chat endpoint whose "model" is a deterministic
script, for recording a cassette of kagent's real prompts on a machine without network.

    python3 tests/gpu/llm_scripted_server.py --port 0 --port-file F --log REQUESTS.jsonl
        [--host 127.0.0.1] [--model scripted-echo]

Contract
--------
* Python standard library only. Listens on HOST:PORT (port 0: the kernel picks one) and,
  once listening, writes the port number to --port-file (atomically: a temporary file
  renamed into place). Runs until SIGTERM/SIGINT.
* ``GET /v1/models``: ``{"object": "list", "data": [{"id": MODEL, "object": "model",
  "owned_by": "kagent-scripted", ...}]}``, as vLLM lists its one served model.
* ``POST /v1/chat/completions`` with an OpenAI chat body: the answer is
  ``{"id", "object": "chat.completion", "created", "model": MODEL, "choices": [{"index": 0,
  "message": {"role": "assistant", "content": TEXT}, "finish_reason": "stop"|"length"}],
  "usage": {"prompt_tokens", "completion_tokens", "total_tokens"}}``. Token counts are an
  estimate from lengths, ceil(characters / 4) (the prompt's: every message's content; the
  completion's: TEXT), not a tokenizer's. A reply longer than ``max_tokens`` such tokens is
  cut there with ``finish_reason`` "length", as a real server would.
* Errors, in vLLM's shape ``{"object": "error", "message", "type", "param", "code"}``:
  404 for another model than MODEL (vLLM's "The model `x` does not exist."), 404 for another
  path, 400 for a body that is not a chat request, and 400 naming the problem for a prompt
  this script does not recognise as one of kagent's agents or cannot read.
* Every request is appended to --log as one JSON line: ``{"seq", "time", "method", "path",
  "status", "agent", "request" (the parsed body), "reply" (TEXT, or the error body),
  "usage"}``. Lines are written whole under a lock.

The script model
----------------
The agent is recognised from the first user message's opening words, which come from
kagent's built-in templates (prompts/*.md; a deployment that overrides them with
``prompts_dir`` gets 400s here). Each answer is derived from the prompt, in the shape the
agent's parser (engines/llm/*.cc) accepts; nothing is canned, and nothing is judged: the
model restates what the prompt measured and applies knob changes mechanically.

* rewrite (rewrite_kernel.md): the prompt's current kernel with the fix's ``knob changes``
  applied to the kernel's literal settings (``NAME=64`` at a launch, ``'NAME': 64`` in a
  triton.Config, ``NAME: tl.constexpr = 64``): ``x2``, ``/2``, ``+1``, ``-1`` or a number;
  a knob the kernel lacks is mapped to one it has whose name shares its stem (BLOCK_SIZE to
  BLOCK); a ``triton.cdiv(A, OLD)`` in the launch code follows a changed block knob when A
  is the knob's dimension (M for BLOCK_M) or no other knob has the value OLD. "variant N" applies the change N times (x2 becomes x4).
  When the fix names tl.max_contiguous / tl.multiple_of and the kernel has none, each
  ``v = ... * B + tl.arange(0, B)`` of a jit function is followed by
  ``v = tl.max_contiguous(tl.multiple_of(v, B), B)``; when it names exp2 and the kernel
  has none, each ``tl.exp(E)`` becomes ``tl.exp2(1.4426950408889634 * (E))``. The reply is one line of prose and the
  whole file in a ```python fence (the fence path of ``FindFencedKernel``). When nothing can
  be changed the kernel comes back unchanged and the prose says so (the coordinator then
  calls the candidate a duplicate).
* repair (repair_kernel.md): a JSON ``{"explanation", "code"}``: the failed kernel with each
  ``triton.cdiv(A, L)`` made equal to the launch value of the block knob of dimension A
  (BLOCK_A), or of the only block knob, when they differ; else with the fix's knob change
  undone; else unchanged, saying it found nothing.
* first kernel (first_kernel.md): a JSON ``{"explanation", "code"}``: a flat elementwise
  Triton kernel when the op summary holds one unary aten op this script knows (relu,
  sigmoid, tanh, silu, gelu, leaky_relu, elu, hardtanh, softplus, abs, neg, exp), with the
  recorded scalar arguments; otherwise ``"code": ""`` and an explanation naming the ops (the
  brain rejects it: the script does not write kernels it cannot derive).
* prescribe (prescribe.md): ``{"prescriptions": [...]}``: the candidates the prompt lists,
  those whose knob change this script can apply to the prompt's kernel first, then by their
  expected speedup (stable), at most the asked number, each with its own knob changes and
  a rationale citing the diagnosis's category and first cited metric.
* reflect (reflect.md): ``fix_worked`` exactly as the prompt's "the fix was (not)
  effective"; ``blame`` none / rewrite (a failed gate, or the rewrite did not make the
  change) / pattern; ``expected_vs_actual`` and ``lessons`` restating the expected and
  measured speedups, the medians and the verdict; ``avoid`` the pattern when it is blamed; ``try_next`` the listed next patterns other than the attempt's.
* plan (plan_round.md): ``{"plan": [...]}``: in beam order, each kernel's offered fixes in
  the listed order, skipping excluded pairs and putting fixes the history says did not
  work last, within the budget and the per-kernel limit.
* narrate (judge_narrative.md): ``{"narrative", "additional_causes"}``: the category and the
  listed metrics (or measured facts) restated, citing at most two with their listed values.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT_NAME = "tests/gpu/llm_scripted_server.py"


class PromptError(Exception):
    """The prompt is not one this script can answer; becomes an HTTP 400."""


# ---------------------------------------------------------------------------------------
# Prompt reading helpers.


def between(text: str, start: str, end: str | None, what: str) -> str:
    """The text after `start` up to `end` (or the end), or PromptError naming `what`."""
    i = text.find(start)
    if i < 0:
        raise PromptError(f"cannot find {what}: the prompt lacks {start.strip()[:60]!r}")
    i += len(start)
    if end is None:
        return text[i:]
    j = text.find(end, i)
    if j < 0:
        raise PromptError(f"cannot find the end of {what}: the prompt lacks {end.strip()[:60]!r}")
    return text[i:j]


def number_text(value: float) -> str:
    """A number as kagent's FormatNumber (%.6g) writes it."""
    return "%.6g" % value


def parse_number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


# ---------------------------------------------------------------------------------------
# Kernel knobs: reading and changing the literal settings of a kernel's knobs.

_NUMBER = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


def knob_settings(source: str, knob: str) -> list[tuple[int, int, str]]:
    """Where `knob` is set to a numeric literal: (start, end, literal) spans of the value.

    Mirrors kagent's KnobSettings (engines/llm/prompt_values.cc): NAME=V (not ==),
    'NAME': V and NAME: tl.constexpr = V; settings whose value is not a literal are left out.
    """
    spans = []
    for m in re.finditer(r"(?<!\w)" + re.escape(knob) + r"(?!\w)", source):
        i = m.end()
        if i < len(source) and source[i] in "'\"":
            i += 1
        while i < len(source) and source[i] in " \t":
            i += 1
        if i >= len(source) or source[i] not in "=:":
            continue
        if source[i] == "=" and source[i + 1:i + 2] == "=":
            continue
        if source[i] == ":":
            rest = source[i + 1:]
            cut = min([p for p in (rest.find(","), rest.find(")"), rest.find("\n")) if p >= 0]
                      or [len(rest)])
            rest = rest[:cut]
            if "constexpr" in rest:
                eq = rest.find("=")
                if eq < 0:
                    continue
                i += 1 + eq
        start = i + 1
        end = start
        while end < len(source) and source[end] not in ",)}]\n#":
            end += 1
        raw = source[start:end]
        literal = raw.strip()
        if not literal or not _NUMBER.match(literal):
            continue
        lead = len(raw) - len(raw.lstrip())
        spans.append((start + lead, start + lead + len(literal), literal))
    return spans


def kernel_knobs(source: str) -> list[str]:
    """The kernel's knobs, roughly as KernelKnobs finds them: its constexpr parameters,
    then num_warps / num_stages when the source sets them."""
    knobs = []
    for name in re.findall(r"(\w+)\s*:\s*(?:tl\.|triton\.language\.)?constexpr", source):
        if name not in knobs:
            knobs.append(name)
    for meta in ("num_warps", "num_stages"):
        if re.search(r"(?<!\w)" + meta + r"\s*=(?!=)", source):
            knobs.append(meta)
    return knobs


def is_power_of_two(n: float) -> bool:
    return n >= 1 and float(n).is_integer() and (int(n) & (int(n) - 1)) == 0


def apply_spec(old: float, spec: str, times: int) -> float | None:
    """The knob's new value for a change spec ("x2", "/2", "+1", "-1", "64"), applied
    `times` times; None when the spec is not numeric (e.g. "sm_count", "bf16", "true")."""
    spec = spec.strip()
    scaled = True
    if m := re.fullmatch(r"x(\d+(?:\.\d+)?)", spec):
        new = old * float(m.group(1)) ** times
    elif m := re.fullmatch(r"/(\d+(?:\.\d+)?)", spec):
        new = old / float(m.group(1)) ** times
    elif m := re.fullmatch(r"([+-]\d+)", spec):
        new, scaled = old + int(m.group(1)) * times, False
    elif m := re.fullmatch(r"\d+", spec):
        new = float(spec) * 2 ** (times - 1)
    else:
        return None
    if float(old).is_integer():
        if scaled and is_power_of_two(old) and new >= 1:  # scaled block sizes stay powers of 2
            new = 2 ** round(math.log2(new))
        new = float(max(1, round(new)))
    return new


def literal_text(value: float, like: str) -> str:
    if value.is_integer() and "." not in like and "e" not in like.lower():
        return str(int(value))
    return repr(value)


# Knobs of the optimization database whose intent a kernel's own knob of another name
# carries: rows per program is a row tile's height.
KNOB_ALIASES = {"ROWS_PER_PROGRAM": ("BLOCK_M", "BLOCK_ROWS")}


def map_knob(knob: str, kernel_knobs: list[str]) -> str | None:
    """A knob of the kernel that carries `knob`'s intent: the same name, else one whose
    name is a prefix of the other's (BLOCK for BLOCK_SIZE), else one sharing the stem
    before the first '_', else one of KNOB_ALIASES. Launch meta-parameters map only to
    themselves."""
    if knob in kernel_knobs:
        return knob
    meta = {"num_warps", "num_stages"}
    if knob in meta:
        return None
    own = [k for k in kernel_knobs if k not in meta]
    for alias in KNOB_ALIASES.get(knob, ()):
        if alias in own:
            return alias
    for k in own:
        if knob.startswith(k) or k.startswith(knob):
            return k
    stem = knob.split("_")[0]
    for k in own:
        if k.split("_")[0] == stem:
            return k
    return None


def launch_code_lines(source: str) -> list[tuple[int, int]]:
    """(start, end) offsets of the lines outside @triton.jit function bodies."""
    out = []
    in_jit = False
    pending_jit = False
    pos = 0
    for line in source.splitlines(keepends=True):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("@") and re.match(r"@\s*(\w+\.)*jit\b", stripped):
            pending_jit = True
        elif pending_jit and stripped.startswith("def "):
            in_jit, pending_jit = True, False
        elif in_jit and stripped and indent == 0 and not stripped.startswith("#"):
            in_jit = False
        if not in_jit and not pending_jit:
            out.append((pos, pos + len(line)))
        pos += len(line)
    return out


def cdiv_literals(source: str) -> list[tuple[int, int, str, str]]:
    """The literal divisors of triton.cdiv(A, L) in the launch code: (start, end, L, A)."""
    spans = []
    for start, end in launch_code_lines(source):
        line = source[start:end]
        for m in re.finditer(r"cdiv\(((?:[^(),]|\([^()]*\))*),\s*(\d+)\s*\)", line):
            spans.append((start + m.start(2), start + m.end(2), m.group(2), m.group(1).strip()))
    return spans


def knob_dimension(knob: str) -> str:
    """The dimension a block knob tiles, by its suffix: M for BLOCK_M, "" for BLOCK."""
    return knob.rsplit("_", 1)[1] if "_" in knob else ""


def replace_spans(source: str, spans: list[tuple[int, int, str]]) -> str:
    for start, end, text in sorted(spans, reverse=True):
        source = source[:start] + text + source[end:]
    return source


def parse_knob_changes(text: str) -> list[tuple[str, str]]:
    """'knob changes: A = x2, B = 8' (DescribeFix) as [(A, x2), (B, 8)]."""
    m = re.search(r"^knob changes: (.*)$", text, re.M)
    if not m:
        return []
    out = []
    for part in m.group(1).split(", "):
        if " = " in part:
            k, v = part.split(" = ", 1)
            out.append((k.strip(), v.strip()))
    return out


def change_knobs(source: str, kernel_knobs: list[str], changes: list[tuple[str, str]],
                 times: int) -> tuple[str, list[str]]:
    """Applies the changes to the source; returns it and one line per change (made or not)."""
    notes = []
    for knob, spec in changes:
        target = map_knob(knob, kernel_knobs)
        if target is None:
            notes.append(f"{knob} = {spec}: the kernel has no knob for it (its knobs: "
                         f"{', '.join(kernel_knobs) or 'none'}); not changed")
            continue
        spans = knob_settings(source, target)
        if not spans:
            notes.append(f"{knob} = {spec}: {target} has no literal setting in the source; "
                         "not changed")
            continue
        old_literal = spans[0][2]
        old = float(old_literal)
        new = apply_spec(old, spec, times)
        if new is None:
            notes.append(f"{knob} = {spec}: not a numeric change this script can make; "
                         "not changed")
            continue
        if new == old:
            notes.append(f"{knob} = {spec}: {target} stays {old_literal} (the change has no "
                         "effect at this value)")
            continue
        new_text = literal_text(new, old_literal)
        edits = [(s, e, new_text) for s, e, lit in spans if float(lit) == old]
        where = f"{target} {old_literal} -> {new_text}" + (
            f" (for {knob} = {spec})" if target != knob else f" ({spec})")
        # A grid computed with the old literal follows a block knob when no other knob
        # of the kernel has that value (otherwise the literal is ambiguous).
        # A grid computed with the old literal follows a block knob: a cdiv over the
        # knob's dimension (cdiv(M, 64) for BLOCK_M), or any cdiv with that literal when no
        # other knob of the kernel has the value (otherwise the literal is ambiguous).
        if not target.startswith("num_"):
            others = [k for k in kernel_knobs if k != target
                      and any(float(lit) == old for _, _, lit in knob_settings(source, k))]
            dim = knob_dimension(target)
            grid = [(s, e, new_text) for s, e, lit, arg in cdiv_literals(source)
                    if float(lit) == old and (not others or (dim and arg == dim))]
            if grid:
                edits += grid
                where += f", and the grid's triton.cdiv(..., {old_literal}) with it"
        source = replace_spans(source, edits)
        notes.append(where)
    return source, notes


# ---------------------------------------------------------------------------------------
# The agents.

KERNEL_FENCE_END = "\n```\n"


def fenced_after(text: str, header: str, what: str) -> str:
    """The body of the ```python fence that follows `header`."""
    body = between(text, header + "\n```python\n", KERNEL_FENCE_END, what)
    return body


def add_contiguity_hints(source: str) -> tuple[str, list[str]]:
    """After each `v = ... * B + tl.arange(0, B)` in a @triton.jit function, the hint
    `v = tl.max_contiguous(tl.multiple_of(v, B), B)`: each program's run of B offsets starts
    at a multiple of B and is contiguous, which is what the hints tell the compiler."""
    jit_lines = set()
    launch = launch_code_lines(source)
    pos = 0
    lines = source.splitlines(keepends=True)
    for n, line in enumerate(lines):
        if not any(a <= pos < b for a, b in launch):
            jit_lines.add(n)
        pos += len(line)
    out, notes = [], []
    for n, line in enumerate(lines):
        out.append(line)
        m = re.match(r"^(\s+)(\w+) = .*\* (\w+) \+ tl\.arange\(0, \3\)\s*(#.*)?$", line.rstrip("\n"))
        if n in jit_lines and m:
            indent, var, block = m.group(1), m.group(2), m.group(3)
            out.append(f"{indent}{var} = tl.max_contiguous(tl.multiple_of({var}, {block}), {block})\n")
            notes.append(f"{var} hinted contiguous in runs of {block} starting at multiples of {block}")
    return "".join(out), notes


def use_exp2(source: str) -> tuple[str, list[str]]:
    """Each tl.exp(E) becomes tl.exp2(1.4426950408889634 * (E)): exp(E) = 2^(E log2 e)."""
    out, notes, i = [], [], 0
    for m in re.finditer(r"(?<![\w.])tl\.exp\(", source):
        if m.start() < i:
            continue
        depth, j = 1, m.end()
        while j < len(source) and depth:
            depth += {"(": 1, ")": -1}.get(source[j], 0)
            j += 1
        if depth:
            break
        inner = source[m.end():j - 1]
        out.append(source[i:m.start()] + f"tl.exp2(1.4426950408889634 * ({inner}))")
        notes.append(f"tl.exp({inner}) as tl.exp2 with log2(e) folded in")
        i = j
    out.append(source[i:])
    return "".join(out), notes


def answer_rewrite(prompt: str) -> str:
    kernel = fenced_after(prompt, "The current kernel (Python source defining ModelNew):",
                          "the current kernel")
    knobs_line = between(prompt, "The current kernel's knobs (its tl.constexpr parameters and "
                         "launch meta-parameters):\n", "\n", "the kernel's knobs")
    knobs = [] if knobs_line.startswith("none") else [k.strip() for k in knobs_line.split(",")]
    fix = between(prompt, "The fix to apply: ", "\n\nLessons from earlier rounds",
                  "the fix to apply")
    title = fix.split("\n", 1)[0]
    changes = parse_knob_changes(fix)
    variant = re.search(r"^variant (\d+):", fix, re.M)
    times = int(variant.group(1)) if variant else 1
    if not changes:
        new, notes = kernel, ["the fix names no knob change"]
    else:
        new, notes = change_knobs(kernel, knobs, changes, times)
    # The constructs a vectorization fix names, where the kernel's offsets allow them.
    if (re.search(r"tl\.max_contiguous|tl\.multiple_of", fix)
            and not re.search(r"tl\.max_contiguous|tl\.multiple_of", new)):
        new, hinted = add_contiguity_hints(new)
        notes += hinted
    if re.search(r"\bexp2\b", fix) and not re.search(r"\bexp2\b", new):
        new, folded = use_exp2(new)
        notes += folded
    if new == kernel:
        prose = (f"Scripted model ({SCRIPT_NAME}) could not apply \"{title}\" "
                 f"({'; '.join(notes)}): the kernel is returned unchanged.")
    else:
        prose = (f"Scripted model ({SCRIPT_NAME}): {'; '.join(notes)}; the rest of the file "
                 "is unchanged.")
    return f"{prose}\n\n```python\n{new.rstrip(chr(10))}\n```\n"


def answer_repair(prompt: str) -> dict:
    kernel = fenced_after(prompt, "The kernel that failed (Python source defining ModelNew):",
                          "the failed kernel")
    verdict = between(prompt, "The gate's verdict: ", "\n", "the verdict").strip()
    fix = between(prompt, "The kernel was written to apply this fix: ",
                  "\n\nThe kernel that failed", "the fix")
    # 1. A grid whose cdiv divisor disagrees with the launch value of the block knob of
    # its dimension (cdiv(M, 64) and BLOCK_M=32), or of the one block knob.
    block_knobs = {}
    for m in re.finditer(r"(?<!\w)(\w*BLOCK\w*)\s*=\s*(\d+)(?=\s*[,)\n])", kernel):
        block_knobs.setdefault(m.group(1), m.group(2))
    grid = cdiv_literals(kernel)
    edits, notes = [], []
    for start, end, lit, arg in grid:
        by_dim = [k for k in block_knobs if knob_dimension(k) == arg]
        knob = (by_dim[0] if len(by_dim) == 1
                else next(iter(block_knobs)) if len(block_knobs) == 1 and len(grid) == 1
                else None)
        if knob and block_knobs[knob] != lit:
            edits.append((start, end, block_knobs[knob]))
            notes.append(f"the grid's triton.cdiv({arg}, {lit}) did not match {knob} = "
                         f"{block_knobs[knob]}, so programs and tiles disagreed; it now divides "
                         f"by {block_knobs[knob]}")
    if edits:
        return {"explanation": f"Scripted model ({SCRIPT_NAME}): the kernel failed the gate "
                               f"({verdict}); {'; '.join(notes)}.",
                "code": replace_spans(kernel, edits)}
    # 2. Undo the fix's knob change.
    changes = parse_knob_changes(fix)
    inverse = []
    for knob, spec in changes:
        if m := re.fullmatch(r"x(\d+(?:\.\d+)?)", spec):
            inverse.append((knob, "/" + m.group(1)))
        elif m := re.fullmatch(r"/(\d+(?:\.\d+)?)", spec):
            inverse.append((knob, "x" + m.group(1)))
        elif m := re.fullmatch(r"([+-])(\d+)", spec):
            inverse.append((knob, ("-" if m.group(1) == "+" else "+") + m.group(2)))
    code, notes = (change_knobs(kernel, kernel_knobs(kernel), inverse, 1) if inverse
                   else (kernel, []))
    if code != kernel:
        return {"explanation": f"Scripted model ({SCRIPT_NAME}): no bug found that it can name "
                               f"in the kernel ({verdict}); the fix's knob change is undone "
                               f"({'; '.join(notes)}), which the prompt asks not to do.",
                "code": code}
    return {"explanation": f"Scripted model ({SCRIPT_NAME}): found no change it can make to the "
                           f"failed kernel ({verdict}); the kernel is returned as it was.",
            "code": kernel}


# aten op -> (Triton expression of x in fp32, the op's scalar arguments with defaults).
UNARY_OPS = {
    "relu": ("tl.maximum(x, 0.0)", {}),
    "sigmoid": ("1.0 / (1.0 + tl.exp(-x))", {}),
    "tanh": ("2.0 / (1.0 + tl.exp(-2.0 * x)) - 1.0", {}),
    "silu": ("x / (1.0 + tl.exp(-x))", {}),
    "abs": ("tl.abs(x)", {}),
    "neg": ("-x", {}),
    "exp": ("tl.exp(x)", {}),
    "leaky_relu": ("tl.where(x >= 0.0, x, x * {negative_slope})", {"negative_slope": 0.01}),
    "elu": ("tl.where(x > 0.0, x, {alpha} * (tl.exp(x) - 1.0))", {"alpha": 1.0}),
    "hardtanh": ("tl.minimum(tl.maximum(x, {min_val}), {max_val})",
                 {"min_val": -1.0, "max_val": 1.0}),
    "softplus": ("tl.where(x * {beta} > {threshold}, x, "
                 "tl.log(1.0 + tl.exp(x * {beta})) / {beta})", {"beta": 1.0, "threshold": 20.0}),
    "gelu": ("0.5 * x * (1.0 + tl.math.erf(x * 0.7071067811865476))", {}),
    "gelu:tanh": ("0.5 * x * (1.0 + (2.0 / (1.0 + tl.exp(-2.0 * (0.7978845608028654 * "
                  "(x + 0.044715 * x * x * x)))) - 1.0))", {}),
}

FIRST_KERNEL = '''# First kernel written by the scripted model of {script} for aten::{op}
# (a flat elementwise kernel: one BLOCK of elements per program, fp32 math).
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def scripted_{name}_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = {expr}
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        n = x.numel()
        scripted_{name}_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024, num_warps=4)
        return y
'''


def answer_first_kernel(prompt: str) -> dict:
    summary = between(prompt, "What the harness recorded about the reference (aten ops, shapes, "
                      "dtypes):\n", "\n\nWrite a Python file", "the op summary")
    ops = re.findall(r"^- aten::(\w+): (.*)$", summary, re.M)
    names = [op for op, _ in ops]
    if len(ops) == 1:
        op, rest = ops[0]
        args = dict(re.findall(r"(\w+)=([-\w.+']+)", rest.split(", with ", 1)[1])) \
            if ", with " in rest else {}
        key = f"{op}:tanh" if op == "gelu" and args.get("approximate") == "'tanh'" else op
        if key in UNARY_OPS:
            expr, defaults = UNARY_OPS[key]
            values = {k: float(args.get(k, v)) for k, v in defaults.items()}
            expr = expr.format(**{k: repr(v) for k, v in values.items()})
            code = FIRST_KERNEL.format(script=SCRIPT_NAME, op=op, name=op, expr=expr)
            given = ", ".join(f"{k}={number_text(v)}" for k, v in values.items())
            return {"explanation": f"Scripted model ({SCRIPT_NAME}): the op summary records one "
                                   f"op, aten::{op}{' with ' + given if given else ''}; this is "
                                   "a flat elementwise kernel for it, one 1024-element block per "
                                   "program in fp32.",
                    "code": code}
    return {"explanation": f"Scripted model ({SCRIPT_NAME}): it writes first kernels only for one "
                           f"unary elementwise op of {sorted(UNARY_OPS)}; this problem records "
                           f"{', '.join('aten::' + n for n in names) or 'no op'}, so it writes "
                           "no code.",
            "code": ""}


def diagnosis_facts(diagnosis: str) -> tuple[str, list[tuple[str, str]]]:
    """The category and the cited (metric, value) evidence of a DescribeReport text."""
    category = re.search(r"^category: (.*)$", diagnosis, re.M)
    evidence = re.findall(r"^\s*\* (\S+) = (\S+)", diagnosis, re.M)
    return (category.group(1).strip() if category else ""), evidence


def answer_prescribe(prompt: str) -> dict:
    listing = between(prompt, "Candidate patterns from the optimization database (id: title - "
                      "preconditions):\n", "\n\nAlready tried", "the candidate patterns")
    most = int(between(prompt, "Rank at most ", " patterns", "the number to rank"))
    diagnosis = between(prompt, "Diagnosis:\n", "\n\nCurrent kernel:", "the diagnosis")
    category, evidence = diagnosis_facts(diagnosis)
    candidates = []
    for line in listing.splitlines():
        m = re.match(r"^- ([^:\s]+): (.*)$", line)
        if not m:
            continue
        rest = m.group(2)
        speedup = re.search(r"; expected ([\d.eE+-]+)x(?:;|$)", rest)
        knobs = re.search(r"(?:^|; )knob changes ((?:[\w]+=[^,;]+(?:, |(?=;)|$))+)", rest)
        changes = {}
        if knobs:
            for part in knobs.group(1).split(", "):
                k, v = part.split("=", 1)
                v = v.strip()
                changes[k.strip()] = ((int(v) if re.fullmatch(r"[+-]?\d+", v) else float(v))
                                      if _NUMBER.match(v) else v)
        title = rest.split(" - ", 1)[0]
        candidates.append((m.group(1), title, float(speedup.group(1)) if speedup else 1.0,
                           changes))
    if not candidates:
        raise PromptError("the prescribe prompt lists no candidate pattern")
    # The fixes this model can make on the current kernel first (a knob change it can
    # apply), then by the database's expected speedup; the sort is stable.
    kernel = between(prompt, "Current kernel:\n```python\n", "\n```\n", "the current kernel")
    knobs = kernel_knobs(kernel)

    def applicable(changes: dict) -> bool:
        for knob, spec in changes.items():
            target = map_knob(knob, knobs)
            spans = knob_settings(kernel, target) if target else []
            old = float(spans[0][2]) if spans else None
            if old is not None and apply_spec(old, str(spec), 1) not in (None, old):
                return True
        return False

    ranked = sorted(candidates, key=lambda c: (not applicable(c[3]), -c[2]))[:max(1, most)]
    cited = (f"{evidence[0][0]} = {evidence[0][1]}" if evidence
             else "no cited metric")
    out = []
    for pid, title, speedup, changes in ranked:
        how = ("its knob change applies to this kernel's knobs" if applicable(changes)
               else "no knob of this kernel carries its change")
        entry = {"pattern_id": pid,
                 "rationale": f"Scripted ranking ({how}; the database expects "
                              f"{number_text(speedup)}x) for a kernel diagnosed "
                              f"{category or 'without a category'} ({cited}).",
                 "expected_effect": f"{title}: about {number_text(speedup)}x, as the database "
                                    "expects",
                 "knob_changes": changes}
        out.append(entry)
    return {"prescriptions": out}


def answer_reflect(prompt: str) -> dict:
    fix = between(prompt, "The fix that was asked for: ", "\nWhat it was expected to do: ",
                  "the fix")
    result = between(prompt, "these facts are final):\n", "\n\nThe attempt's kernel:",
                     "the measured result")
    nexts = between(prompt, "could come next (id: title):\n", "\n\nHistory of this job",
                    "the next patterns")
    pattern = re.search(r"^pattern: (\S+)", fix, re.M)
    pattern = pattern.group(1) if pattern else ""
    verdict = re.search(r"^verdict: (\S+)", result, re.M)
    verdict = verdict.group(1) if verdict else "VERDICT_UNSPECIFIED"
    if "\nthe fix was effective" in "\n" + result:
        worked = True
    elif "\nthe fix was not effective" in "\n" + result:
        worked = False
    else:
        raise PromptError("the reflect prompt does not say whether the fix was effective")
    medians = re.search(r"parent median (\S+) ms, attempt median (\S+) ms; speedup over the "
                        r"parent (\S+)x", result)
    expected = re.search(r"^expected speedup (\S+)x", result, re.M)
    unmade = "\nthe rewrite did not make the prescribed change" in "\n" + result
    failed = verdict != "VERDICT_CORRECT"
    blame = "none" if worked else ("rewrite" if failed or unmade else "pattern")
    measured = (f"measured {medians.group(3)}x (parent {medians.group(1)} ms, attempt "
                f"{medians.group(2)} ms, {verdict})" if medians
                else f"measured nothing comparable: {verdict}")
    reason = re.search(r"^the gate's reason: (.*)$", result, re.M)
    if reason:
        measured += f" ({reason.group(1)[:200]})"
    ids = [m for m in re.findall(r"^- ([^:\s]+): ", nexts, re.M)]
    try_next = [i for i in ids if i != pattern][:2]
    name = pattern or fix.split("\n", 1)[0]
    expected_text = f"{expected.group(1)}x" if expected else "no stated speedup"
    lesson = (f"Scripted model: {name} {measured} against {expected_text} expected; the fix "
              f"was {'effective' if worked else 'not effective'}")
    if unmade:
        lesson += " (the rewrite did not make the whole prescribed change)"
    return {"fix_worked": worked,
            "diagnosis_correct": worked or blame == "rewrite",
            "expected_vs_actual": f"expected {expected_text}; {measured}",
            "blame": blame,
            "lessons": [lesson],
            "avoid": [pattern] if blame == "pattern" and pattern else [],
            "try_next": try_next}


def answer_plan(prompt: str) -> dict:
    beam = between(prompt, "(id: title; expected speedup; expected effect; rationale):\n",
                   "\n\nExcluded by the job's rules", "the beam")
    excluded_text = between(prompt, "Excluded by the job's rules (not to be planned):\n",
                            "\n\nHistory of this job", "the excluded pairs")
    lessons = between(prompt, "History of this job so far:\n", "\n\nChoose at most",
                      "the history")
    limits = re.search(r"Choose at most (\d+) pairs in all, at most (\d+) per kernel", prompt)
    if not limits:
        raise PromptError("the plan prompt states no budget")
    budget, per_kernel = int(limits.group(1)), int(limits.group(2))
    excluded = set(re.findall(r"^- (\S+) \+ (\S+):", excluded_text, re.M))
    failed = set(re.findall(r"^- round \d+, ([^:\s]+): fix did not work", lessons, re.M))
    kernels: list[tuple[str, int, list[tuple[str, str]]]] = []
    in_fixes = False
    for line in beam.splitlines():
        if m := re.match(r"^kernel (\S+) \(beam rank (\d+)\):$", line):
            kernels.append((m.group(1), int(m.group(2)), []))
            in_fixes = False
        elif line == "  fixes offered:":
            in_fixes = True
        elif in_fixes and kernels and (m := re.match(r"^  - ([^:\s]+): (.*)$", line)):
            if m.group(1) != "(none)":
                kernels[-1][2].append((m.group(1), m.group(2)))
    plan = []
    for kid, rank, fixes in kernels:
        usable = [f for f in fixes if (kid, f[0]) not in excluded]
        usable.sort(key=lambda f: f[0] in failed)  # stable: failed fixes last
        for pid, desc in usable[:per_kernel]:
            if len(plan) >= budget:
                break
            note = "; the history says it did not work before" if pid in failed else ""
            plan.append({"parent": kid, "pattern": pid,
                         "reason": f"scripted: fix offered for beam rank {rank} in the "
                                   f"database's order ({desc.split(';')[0]}){note}"})
    return {"plan": plan}


def answer_narrate(prompt: str) -> dict:
    kernel = between(prompt, "Kernel: ", "\n", "the kernel's name").strip()
    category = between(prompt, "Category (fixed): ", "\n", "the category").strip()
    head = re.search(r"^(Measured metrics, from its profile \(name = value\):|No hardware "
                     r"counters exist for this kernel: .*)$", prompt, re.M)
    if not head:
        raise PromptError("the narrative prompt has neither a profile nor a no-counters line")
    block = between(prompt[head.end():], "\n", "\nReply with one JSON object", "the metrics")
    listed = re.findall(r"^([A-Za-z_][\w.:/\-]*) = (\S+)(?: \(profile\))?$", block, re.M)
    listed = [(n, v) for n, v in listed if parse_number(v) is not None]
    profiled = head.group(1).startswith("Measured metrics")
    if profiled:
        words = {"memory": ("dram", "lts", "l1tex", "mem", "bytes"),
                 "compute": ("sm__", "pipe", "inst", "flop", "tensor"),
                 "latency": ("stall", "warps", "occupancy", "issue")}
        key = next((k for k in words if k in category), None)
        relevant = [p for p in listed if key and any(w in p[0] for w in words[key])]
        cite = (relevant + [p for p in listed if p not in relevant])[:3]
        what = (f"Its profile lists {len(listed)} metric(s); those that bear on it: "
                + ", ".join(f"{n} = {v}" for n, v in cite) + "." if cite
                else "Its profile lists no metric.")
    else:
        reason = head.group(1).split(": ", 1)[1].split(". Nothing here", 1)[0]
        cite = [p for p in listed if "speedup" in p[0]][:2] or listed[:2]
        what = (f"No hardware counters exist for it ({reason}); what was measured: "
                + ", ".join(f"{n} = {v}" for n, v in listed) + "." if listed
                else f"No hardware counters exist for it ({reason}).")
    classified = (f"the rules leave {kernel} unclassified ({category[len('none: '):]})"
                  if category.startswith("none: ") else
                  f"the rules classify {kernel} as {category}")
    narrative = (f"Scripted narrative ({SCRIPT_NAME}): {classified}. {what} This restates "
                 "the listed values; it adds no judgement.")
    causes = [{"metric": n, "value": float(v),
               "explanation": f"{n} is {v} as listed (restated by the scripted model)"}
              for n, v in cite[:2]]
    return {"narrative": narrative, "additional_causes": causes}


# The agents, each recognised by its template's opening words.
AGENTS = [
    ("rewrite", "Apply one optimization to a GPU kernel for ", answer_rewrite),
    ("repair", "Repair a GPU kernel for ", answer_repair),
    ("first_kernel", "Write a first, correct kernel for the following problem on ",
     answer_first_kernel),
    ("prescribe", "Choose optimizations for a kernel running on ", answer_prescribe),
    ("reflect", "Reflect on one optimization attempt (round ", answer_reflect),
    ("plan", "Plan round ", answer_plan),
    ("narrate", "A kernel ran on ", answer_narrate),
]


def classify(prompt: str) -> str | None:
    for name, opening, _ in AGENTS:
        if prompt.startswith(opening):
            return name
    return None


def answer(messages: list) -> tuple[str, str]:
    """(agent, reply text) for a chat's messages; PromptError when it cannot answer.

    The agent and the answer come from the first user message (a re-ask appends the
    earlier reply and a complaint; the script answers the same question the same way).
    """
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise PromptError("the request has no user message")
    content = users[0].get("content")
    if isinstance(content, list):  # OpenAI content parts
        content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
    if not isinstance(content, str):
        raise PromptError("the first user message's content is not text")
    agent = classify(content)
    if agent is None:
        raise PromptError("the scripted model does not recognise this prompt as one of kagent's "
                          "agents (rewrite, repair, first_kernel, prescribe, reflect, plan, "
                          f"narrate); it begins: {content[:80]!r}")
    handler = next(h for n, _, h in AGENTS if n == agent)
    reply = handler(content)
    if isinstance(reply, dict):
        reply = json.dumps(reply, indent=1)
    return agent, reply


# ---------------------------------------------------------------------------------------
# HTTP.


def estimate_tokens(chars: int) -> int:
    return (chars + 3) // 4


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address, model: str, log_path: str | None):
        super().__init__(address, Handler)
        self.model = model
        self.log_path = log_path
        self.lock = threading.Lock()
        self.seq = 0

    def record(self, entry: dict) -> int:
        with self.lock:
            self.seq += 1
            entry = {"seq": self.seq, "time": round(time.time(), 3), **entry}
            if self.log_path:
                with open(self.log_path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(entry, ensure_ascii=False) + "\n")
            return self.seq


class Handler(BaseHTTPRequestHandler):
    server: Server
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # the JSONL log is the record; keep stderr quiet
        pass

    def send_json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def error_body(self, status: int, message: str, kind: str) -> dict:
        return {"object": "error", "message": message, "type": kind, "param": None,
                "code": status}

    def fail(self, status: int, message: str, kind: str, request=None, agent=None) -> None:
        body = self.error_body(status, message, kind)
        self.server.record({"method": self.command, "path": self.path, "status": status,
                            "agent": agent, "request": request, "reply": body})
        self.send_json(status, body)

    def do_GET(self):
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/models":
            self.fail(404, f"no route GET {self.path}", "NotFoundError")
            return
        body = {"object": "list",
                "data": [{"id": self.server.model, "object": "model", "created": 0,
                          "owned_by": "kagent-scripted", "root": self.server.model,
                          "parent": None, "max_model_len": 131072}]}
        self.server.record({"method": "GET", "path": self.path, "status": 200, "agent": None,
                            "request": None, "reply": body})
        self.send_json(200, body)

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length > 0 else b""
        path = self.path.split("?", 1)[0].rstrip("/")
        if path != "/v1/chat/completions":
            self.fail(404, f"no route POST {self.path}", "NotFoundError")
            return
        try:
            request = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            self.fail(400, f"the body is not JSON: {e}", "BadRequestError")
            return
        if not isinstance(request, dict) or not isinstance(request.get("messages"), list):
            self.fail(400, "the body is not a chat request: it needs a \"messages\" list",
                      "BadRequestError", request)
            return
        model = request.get("model") or self.server.model
        if model != self.server.model:
            self.fail(404, f"The model `{model}` does not exist.", "NotFoundError", request)
            return
        try:
            agent, text = answer(request["messages"])
        except PromptError as e:
            self.fail(400, f"scripted model: {e}", "BadRequestError", request)
            return
        except Exception as e:  # a bug of this script: say so instead of hanging up
            self.fail(500, f"scripted model failed: {type(e).__name__}: {e}",
                      "InternalServerError", request)
            return
        prompt_chars = 0
        for m in request["messages"]:
            c = m.get("content") if isinstance(m, dict) else None
            if isinstance(c, str):
                prompt_chars += len(c)
            elif isinstance(c, list):
                prompt_chars += sum(len(p.get("text", "")) for p in c if isinstance(p, dict))
        finish = "stop"
        max_tokens = request.get("max_tokens")
        if isinstance(max_tokens, int) and max_tokens > 0 and estimate_tokens(len(text)) > max_tokens:
            text, finish = text[:max_tokens * 4], "length"
        usage = {"prompt_tokens": estimate_tokens(prompt_chars),
                 "completion_tokens": estimate_tokens(len(text))}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        seq = self.server.record({"method": "POST", "path": self.path, "status": 200,
                                  "agent": agent, "request": request, "reply": text,
                                  "finish_reason": finish, "usage": usage})
        self.send_json(200, {"id": f"chatcmpl-scripted-{seq}", "object": "chat.completion",
                             "created": int(time.time()), "model": self.server.model,
                             "choices": [{"index": 0, "message": {"role": "assistant",
                                                                   "content": text},
                                          "finish_reason": finish}],
                             "usage": usage})


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0: the kernel picks one")
    ap.add_argument("--port-file", help="write the port here once listening")
    ap.add_argument("--log", help="append every request and reply here (JSON lines)")
    ap.add_argument("--model", default="scripted-echo", help="the model id served")
    args = ap.parse_args(argv)
    server = Server((args.host, args.port), args.model, args.log)
    port = server.server_address[1]
    if args.port_file:
        tmp = args.port_file + ".tmp"
        with open(tmp, "w") as f:
            f.write(f"{port}\n")
        os.replace(tmp, args.port_file)

    def stop(signum, frame):
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"llm_scripted_server: model {args.model} on http://{args.host}:{port}", flush=True)
    server.serve_forever()
    server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
