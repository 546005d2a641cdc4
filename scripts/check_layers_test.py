#!/usr/bin/env python3
"""Tests of check_layers.py on small trees made for each rule: it must fail on every kind
of include the layers forbid and pass on the ones they allow."""

import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
CHECK = os.path.join(HERE, "check_layers.py")


def run(files):
    """Writes {path: text} into a fresh tree and runs the check on it: (exit, output)."""
    with tempfile.TemporaryDirectory() as root:
        for path, text in files.items():
            full = os.path.join(root, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)
        return p.returncode, p.stdout


def inc(*headers):
    return "".join(f'#include "{h}"\n' for h in headers)


BASE = {
    "common/status.h": "",
    "kernel_model/roofline.h": inc("common/status.h"),
    "engines/kernel_brain.h": inc("kernel_model/roofline.h"),
    "engines/heuristic/brain.h": inc("engines/kernel_brain.h"),
    "engines/llm/brain.h": inc("engines/kernel_brain.h"),
    "services/judge/judge.h": inc("kernel_model/roofline.h"),
    "services/judge/judge_service.h": inc("services/judge/judge.h"),
    "services/analyzer/analyzer_setup.h": inc("services/judge/judge_service.h"),
    "services/analyzer/analyzer_setup.cc": inc("engines/heuristic/brain.h"),
    "tools/kagentd.cc": inc("services/analyzer/analyzer_setup.h"),
}


class CheckLayersTest(unittest.TestCase):
    def test_a_tree_that_follows_the_layers_passes(self):
        code, out = run(BASE)
        self.assertEqual(code, 0, out)
        self.assertIn("0 against the layers", out)

    def assert_fails(self, extra, why):
        code, out = run({**BASE, **extra})
        self.assertEqual(code, 1, out)
        self.assertIn(why, out)

    def test_an_include_of_a_higher_layer_fails(self):
        self.assert_fails({"kernel_model/view.h": inc("services/judge/judge.h")},
                          "layer 1 (kernel_model) includes layer 3 (services/judge)")
        self.assert_fails({"common/x.h": inc("kernel_model/roofline.h")},
                          "layer 0 (common) includes layer 1 (kernel_model)")

    def test_a_service_reaching_into_another_fails(self):
        self.assert_fails({"services/analyzer/analyzer.cc": inc("services/judge/judge.h")},
                          "services/analyzer reaches into the internals of services/judge")

    def test_a_brain_including_another_fails(self):
        self.assert_fails({"engines/llm/x.cc": inc("engines/heuristic/brain.h")},
                          "engines/llm reaches into the internals of engines/heuristic")

    def test_a_service_naming_a_brain_outside_its_composition_fails(self):
        self.assert_fails({"services/analyzer/analyzer.cc": inc("engines/heuristic/brain.h")},
                          "names a brain's implementation outside its composition files")

    def test_a_test_may_wire_one_layer_but_not_reach_up(self):
        code, out = run({**BASE, "services/analyzer/x_test.cc": inc("services/judge/judge.h")})
        self.assertEqual(code, 0, out)
        self.assert_fails({"engines/llm/x_test.cc": inc("services/judge/judge.h")},
                          "layer 2 (engines/llm) includes layer 3 (services/judge)")

    def test_the_picture_must_match_the_code(self):
        with tempfile.TemporaryDirectory() as root:
            for path, text in BASE.items():
                os.makedirs(os.path.dirname(os.path.join(root, path)), exist_ok=True)
                with open(os.path.join(root, path), "w", encoding="utf-8") as f:
                    f.write(text)
            svg = os.path.join(root, "layers.svg")
            p = subprocess.run([sys.executable, CHECK, "--svg", svg, root], capture_output=True)
            self.assertEqual(p.returncode, 0)
            p = subprocess.run([sys.executable, CHECK, "--check-svg", svg, root],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout)
            with open(os.path.join(root, "services/judge/judge.h"), "a", encoding="utf-8") as f:
                f.write(inc("engines/kernel_brain.h"))
            p = subprocess.run([sys.executable, CHECK, "--check-svg", svg, root],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 1)
            self.assertIn("is not what the code draws today", p.stdout)


if __name__ == "__main__":
    unittest.main()
