"""The Python renderer (template_render.py) against the C++ one, and its include step.

Every template rendered by the mirror with its defaults must equal the CLI's output byte
for byte (skipped without kagent-template-render, found through KAGENT_TEMPLATE_RENDER or
in build/). The include cases run on a small template directory of their own.
"""
import glob
import json
import os
import subprocess

import pytest

import template_render

BINARY = template_render.cli_binary()
IDS = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(template_render.TEMPLATES, "*.json")))


@pytest.mark.skipif(BINARY is None, reason="kagent-template-render not built")
@pytest.mark.parametrize("template_id", IDS)
def test_mirror_matches_the_cli(template_id, monkeypatch):
    monkeypatch.delenv("KAGENT_TEMPLATE_RENDER", raising=False)
    mirror = template_render.render(template_id)
    cli = subprocess.run([BINARY, template_id], check=True, capture_output=True, text=True).stdout
    assert mirror == cli
    assert "{{" not in mirror


def _library(tmp_path, monkeypatch, py, partials):
    (tmp_path / "partials").mkdir()
    (tmp_path / "t.json").write_text(json.dumps({"id": "t", "params": {
        "B": {"kind": "knob", "type": "pow2", "min": 1, "max": 64, "default": 4},
        "N": {"kind": "shape", "type": "int", "min": 0, "max": 99, "default": 7}}}))
    (tmp_path / "t.py").write_text(py)
    for name, text in partials.items():
        (tmp_path / "partials" / (name + ".py")).write_text(text)
    monkeypatch.setattr(template_render, "TEMPLATES", str(tmp_path))
    monkeypatch.delenv("KAGENT_TEMPLATE_RENDER", raising=False)


def test_include_is_indented_like_its_line(tmp_path, monkeypatch):
    _library(tmp_path, monkeypatch,
             "def f():\n    for i in range(3):\n        {{> step}}\n    x = {{N}}\n"
             "{{>  tail }}\n    {{> tail}}",
             {"step": "a = {{B}}\nif a:\n    b = a * {{N}}\n\nc = 1\n", "tail": "return c\n"})
    assert template_render.render("t", B=16) == (
        "def f():\n    for i in range(3):\n        a = 16\n        if a:\n"
        "            b = a * 7\n\n        c = 1\n    x = 7\nreturn c\n    return c")


@pytest.mark.parametrize("py, partials, message", [
    ("x = 1\n    {{> nope}}\n", {}, "t.py:2: unknown partial 'nope'"),
    ("{{> outer}}\n", {"outer": "{{> inner}}\n", "inner": "y = 2\n"},
     "partials cannot include partials"),
    ("{{> p}}\n", {"p": "z = {{UNDECLARED}}\n"}, "{{UNDECLARED}} has no param in t.json"),
    ("x = 1  {{> p}}\n", {"p": "y = 2\n"}, "t.py:1: malformed include"),
    ("{{> p}}\n", {"p": ""}, "partial 'p' (partials/p.py) is empty"),
])
def test_bad_includes_are_errors(tmp_path, monkeypatch, py, partials, message):
    _library(tmp_path, monkeypatch, py, partials)
    with pytest.raises(ValueError) as err:
        template_render.render("t")
    assert message in str(err.value)
