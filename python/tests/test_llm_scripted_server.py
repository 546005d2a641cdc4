"""tests/gpu/llm_scripted_server.py, the scripted vLLM-shaped endpoint of tests/gpu/llm_job.sh.

The server runs as llm_job.sh runs it (a subprocess on port 0 with --port-file and --log)
and is sent prompts kagentd really rendered (tests/fixtures/llm/cpu_relu_prompts.jsonl,
from the cassettes of two CPU jobs), some edited here to reach other branches, plus two the
test renders from prompts/*.md (a repair, and a narrative with profile metrics, which a
CPU job never sends). Each reply is checked against what the agent's parser in
engines/llm/ requires and against the prompt it answers.
"""

import ast
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SERVER = os.path.join(REPO, "tests", "gpu", "llm_scripted_server.py")
FIXTURE = os.path.join(REPO, "tests", "fixtures", "llm", "cpu_relu_prompts.jsonl")
PROMPTS = os.path.join(REPO, "prompts")
MODEL = "scripted-test"


@pytest.fixture(scope="module")
def recorded():
    with open(FIXTURE, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    system = lines[0]["system"]
    return system, {e["agent"]: e["user"] for e in lines[1:]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    d = tmp_path_factory.mktemp("scripted")
    port_file, log = d / "port", d / "requests.jsonl"
    proc = subprocess.Popen([sys.executable, SERVER, "--port", "0", "--port-file", str(port_file),
                             "--log", str(log), "--model", MODEL],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(100):
            if port_file.exists() and port_file.read_text().strip():
                break
            assert proc.poll() is None, proc.stdout.read().decode()
            time.sleep(0.05)
        yield {"url": f"http://127.0.0.1:{int(port_file.read_text())}", "log": log}
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def call(server, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(server["url"] + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def chat(server, system, user, **extra):
    body = {"model": MODEL, "messages": [{"role": "system", "content": system},
                                         {"role": "user", "content": user}],
            "max_tokens": 4096, "stream": False, **extra}
    status, reply = call(server, "POST", "/v1/chat/completions", body)
    assert status == 200, reply
    assert reply["model"] == MODEL and reply["object"] == "chat.completion"
    choice = reply["choices"][0]
    text = choice["message"]["content"]
    # Usage from lengths: ceil(chars / 4) of every message, and of the reply.
    assert reply["usage"]["prompt_tokens"] == math.ceil((len(system) + len(user)) / 4)
    assert reply["usage"]["completion_tokens"] == math.ceil(len(text) / 4)
    assert reply["usage"]["total_tokens"] == (reply["usage"]["prompt_tokens"]
                                              + reply["usage"]["completion_tokens"])
    return text, choice["finish_reason"]


# The parsers' rules (engines/llm/prompt_values.cc), restated.
def is_model_new(line):
    return re.match(r"^class\s+ModelNew\s*[(:]", line) is not None


def check_kernel_source(code):
    lines = code.splitlines()
    assert any(is_model_new(line) for line in lines), "no top-level class ModelNew"
    assert any(re.match(r"^\s*@\s*(\w+\.)*jit\b", line) for line in lines), "no @triton.jit"
    ast.parse(code)


def fenced_kernel(reply):
    """FindFencedKernel: the first fence opening a line whose body defines ModelNew."""
    for m in re.finditer(r"(?m)^```[^\n]*\n(.*?)(?:\n```|\Z)", reply, re.S):
        if any(is_model_new(line) for line in m.group(1).splitlines()):
            return m.group(1) + "\n", reply[:m.start()].strip()
    return None, None


def prompt_kernel(prompt, header):
    return prompt.split(header + "\n```python\n", 1)[1].split("\n```\n", 1)[0]


def only_json(text):
    value = json.loads(text)  # the replies are exactly one object, as system.md asks
    assert isinstance(value, dict)
    return value


# ---------------------------------------------------------------------------------------


def test_models_lists_the_model(server):
    status, body = call(server, "GET", "/v1/models")
    assert status == 200
    assert body["object"] == "list" and [m["id"] for m in body["data"]] == [MODEL]


def test_rewrite_is_the_prompts_kernel_with_the_knob_changed(server, recorded):
    system, prompts = recorded
    prompt = prompts["rewrite"]
    assert "knob changes: BLOCK_SIZE = x2" in prompt and "BLOCK=1024" in prompt
    text, finish = chat(server, system, prompt)
    assert finish == "stop"
    code, prose = fenced_kernel(text)
    assert code is not None, text
    check_kernel_source(code)
    assert "Scripted model" in prose and "BLOCK 1024 -> 2048" in prose
    parent = prompt_kernel(prompt, "The current kernel (Python source defining ModelNew):")
    # The knob and the grid that divides by it doubled, the hints the fix names added;
    # every other line as it was.
    assert re.findall(r"BLOCK=(\d+)", parent) == ["1024"]
    assert re.findall(r"BLOCK=(\d+)", code) == ["2048"]
    assert re.findall(r"cdiv\(n, (\d+)\)", code) == ["2048"]
    hint = "    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)"
    new_lines = code.rstrip("\n").split("\n")
    assert hint in new_lines and hint not in parent
    new_lines.remove(hint)
    old_lines = parent.rstrip("\n").split("\n")
    assert len(new_lines) == len(old_lines)
    changed = [(a, b) for a, b in zip(old_lines, new_lines) if a != b]
    assert len(changed) == 1
    assert changed[0][1] == changed[0][0].replace("1024", "2048")


def test_rewrite_variant_and_a_change_it_cannot_make(server, recorded):
    system, prompts = recorded
    base = prompts["rewrite"]
    # The second worker on the same fix (DescribeFix's variant line): the change twice.
    variant = base.replace("knob changes: BLOCK_SIZE = x2\n", "knob changes: BLOCK_SIZE = x2\n"
                           "variant 2: other workers apply this same fix in parallel; choose a "
                           "different way to apply it (other tile sizes, warps or stages) than "
                           "the most obvious one, so that the candidates differ.\n")
    assert variant != base
    code, _ = fenced_kernel(chat(server, system, variant)[0])
    assert re.findall(r"BLOCK=(\d+)", code) == ["4096"]
    # Halving: the grid follows, so every element is still covered.
    halve = base.replace("knob changes: BLOCK_SIZE = x2", "knob changes: BLOCK_SIZE = /4")
    code, _ = fenced_kernel(chat(server, system, halve)[0])
    assert re.findall(r"BLOCK=(\d+)", code) == ["256"]
    assert re.findall(r"cdiv\(n, (\d+)\)", code) == ["256"]
    # A knob the kernel has nothing for, and no construct: the kernel comes back as it was.
    other = base.replace("knob changes: BLOCK_SIZE = x2", "knob changes: USE_EXP2 = true")
    other = re.sub(r"tl\.max_contiguous|tl\.multiple_of", "hints", other)
    text, _ = chat(server, system, other)
    code, prose = fenced_kernel(text)
    parent = prompt_kernel(base, "The current kernel (Python source defining ModelNew):")
    assert code.rstrip("\n") == parent.rstrip("\n")
    assert "unchanged" in prose and "USE_EXP2" in prose


def test_prescribe_picks_only_the_offered_candidates(server, recorded):
    system, prompts = recorded
    prompt = prompts["prescribe"]
    value = only_json(chat(server, system, prompt)[0])
    listing = prompt.split("(id: title - preconditions):\n", 1)[1].split("\n\nAlready tried")[0]
    offered = {}
    for line in listing.splitlines():
        m = re.match(r"^- ([^:\s]+): .*?; expected ([\d.]+)x", line)
        knobs = re.search(r"knob changes ([^;]*)", line)
        offered[m.group(1)] = (float(m.group(2)),
                               {kv.split("=")[0] for kv in knobs.group(1).split(", ")}
                               if knobs else set())
    most = int(re.search(r"Rank at most (\d+) patterns", prompt).group(1))
    entries = value["prescriptions"]
    assert 1 <= len(entries) <= most
    ids = [e["pattern_id"] for e in entries]
    assert len(set(ids)) == len(ids) and set(ids) <= set(offered)
    # Best expected speedup first (the first, vectorize-global-access, is also the one whose
    # knob the kernel has, as BLOCK); every knob one its pattern changes.
    assert [offered[i][0] for i in ids] == sorted((offered[i][0] for i in ids), reverse=True)
    for e in entries:
        assert set(e["knob_changes"]) <= offered[e["pattern_id"]][1]
        assert all(isinstance(v, (str, int, float)) for v in e["knob_changes"].values())
        assert isinstance(e["rationale"], str) and isinstance(e["expected_effect"], str)
    assert ids[0] == "vectorize-global-access"
    assert entries[0]["knob_changes"] == {"BLOCK_SIZE": "x2"}
    assert "applies to this kernel's knobs" in entries[0]["rationale"]
    # A fix the model can make on this kernel (num_warps is set at its launch) goes before
    # the ones it cannot, whatever their expected speedups; an integer stays an integer.
    assert "num_warps=4" in prompt
    edited = re.sub(r"(- mask-free-main-loop: .*?knob changes )\w+=\w+", r"\1num_warps=8", prompt)
    assert "knob changes num_warps=8" in edited
    ids = [e["pattern_id"] for e in only_json(chat(server, system, edited)[0])["prescriptions"]]
    assert ids[:2] == ["vectorize-global-access", "mask-free-main-loop"]
    edited = edited.replace("knob changes BLOCK_SIZE=x2", "knob changes SPLIT_K=8")
    entries = only_json(chat(server, system, edited)[0])["prescriptions"]
    assert [e["pattern_id"] for e in entries][:2] == ["mask-free-main-loop",
                                                      "vectorize-global-access"]
    assert entries[0]["knob_changes"] == {"num_warps": 8}
    assert entries[1]["knob_changes"] == {"SPLIT_K": 8}


def test_plan_keeps_to_the_beam_the_budget_and_the_exclusions(server, recorded):
    system, prompts = recorded
    prompt = prompts["plan"]
    kid = re.search(r"^kernel (\S+) \(beam rank 1\):$", prompt, re.M).group(1)
    offered = re.findall(r"^  - ([^:\s]+): ", prompt, re.M)
    value = only_json(chat(server, system, prompt)[0])
    budget = int(re.search(r"Choose at most (\d+) pairs", prompt).group(1))
    assert [(e["parent"], e["pattern"]) for e in value["plan"]] == \
        [(kid, p) for p in offered[:budget]]
    # The rules exclude the first fix and the history says the second did not work: the
    # plan skips the first and puts the second last.
    edited = prompt.replace("Excluded by the job's rules (not to be planned):\nnone",
                            f"Excluded by the job's rules (not to be planned):\n- {kid} + "
                            f"{offered[0]}: on the avoid-list")
    edited = edited.replace("History of this job so far:\nnone",
                            f"History of this job so far:\n- round 1, {offered[1]}: fix did not "
                            "work (expected 1.10x, measured 0.97x)")
    assert edited.count(offered[0]) > prompt.count(offered[0])
    value = only_json(chat(server, system, edited)[0])
    pairs = [(e["parent"], e["pattern"]) for e in value["plan"]]
    assert (kid, offered[0]) not in pairs
    assert pairs == [(kid, offered[2]), (kid, offered[1])]
    assert all(isinstance(e["reason"], str) for e in value["plan"])


def test_reflect_restates_the_measurement(server, recorded):
    system, prompts = recorded
    prompt = prompts["reflect"]
    assert "\nthe fix was effective" in prompt
    value = only_json(chat(server, system, prompt)[0])
    speedup = re.search(r"speedup over the parent (\S+)x", prompt).group(1)
    assert value["fix_worked"] is True and value["blame"] == "none"
    assert speedup in value["expected_vs_actual"]
    nexts = re.findall(r"^- ([^:\s]+): ", prompt.split("could come next (id: title):\n")[1]
                       .split("\n\nHistory")[0], re.M)
    assert value["try_next"] and set(value["try_next"]) <= set(nexts)
    assert "vectorize-global-access" not in value["try_next"]
    assert all(isinstance(x, str) for x in value["lessons"] + value["avoid"])
    # The same attempt measured as not effective and correct: the pattern is blamed.
    slower = prompt.replace("\nthe fix was effective", "\nthe fix was not effective")
    value = only_json(chat(server, system, slower)[0])
    assert value["fix_worked"] is False and value["blame"] == "pattern"
    assert value["avoid"] == ["vectorize-global-access"]
    # Failing the gate: the rewrite is blamed.
    failed = slower.replace("verdict: VERDICT_CORRECT", "verdict: VERDICT_INCORRECT")
    value = only_json(chat(server, system, failed)[0])
    assert value["blame"] == "rewrite" and value["avoid"] == []


def test_narrative_cites_only_listed_values(server, recorded):
    system, prompts = recorded
    prompt = prompts["narrate"]
    assert "No hardware counters exist" in prompt
    value = only_json(chat(server, system, prompt)[0])
    listed = dict(re.findall(r"^(\w+) = (\S+)$", prompt, re.M))
    assert isinstance(value["narrative"], str) and "Scripted" in value["narrative"]
    assert value["additional_causes"]
    for c in value["additional_causes"]:
        assert c["metric"] in listed and c["value"] == float(listed[c["metric"]])


def render(name, values):
    with open(os.path.join(PROMPTS, name + ".md"), encoding="utf-8") as f:
        text = f.read()
    out = re.sub(r"\{\{\s*(\w+)\s*\}\}", lambda m: values[m.group(1)], text)
    assert "{{" not in out
    return out


def test_narrative_with_profile_metrics(server, recorded):
    system, _ = recorded
    metrics = ("dram__throughput.avg.pct_of_peak_sustained_elapsed = 89.7\n"
               "sm__warps_active.avg.pct_of_peak_sustained_active = 46.5\n"
               "lts__t_sector_hit_rate.pct = 2.9\n"
               "sm__throughput.avg.pct_of_peak_sustained_elapsed = 14.8 (profile)")
    prompt = render("judge_narrative", {
        "gpu": "NVIDIA H200 (sm_90, 132 SMs, 4.80 TB/s DRAM, 60 MiB L2)",
        "kernel_name": "matvec_kernel", "category": "memory-bound",
        "diagnosis": "category: memory-bound\nroofline efficiency: 90.6%, headroom: 9.4%",
        "profile": "Measured metrics, from its profile (name = value):", "metrics": metrics})
    value = only_json(chat(server, system, prompt)[0])
    assert "memory-bound" in value["narrative"]
    cited = {c["metric"]: c["value"] for c in value["additional_causes"]}
    # A memory-bound kernel: the memory metrics first, each with its listed value.
    assert cited == {"dram__throughput.avg.pct_of_peak_sustained_elapsed": 89.7,
                     "lts__t_sector_hit_rate.pct": 2.9}


def test_repair_makes_the_grid_follow_the_block(server, recorded):
    system, prompts = recorded
    parent = prompt_kernel(prompts["rewrite"],
                           "The current kernel (Python source defining ModelNew):")
    broken = parent.replace("BLOCK=1024", "BLOCK=512")  # the grid still divides by 1024
    prompt = render("repair_kernel", {
        "gpu": "NVIDIA H200", "attempt": "1", "problem_source": "# (the reference)",
        "fix_title": "Split the work into smaller blocks",
        "fix_description": "pattern: split-work-smaller-blocks\nknob changes: BLOCK_SIZE = /2",
        "kernel_source": broken, "verdict": "VERDICT_INCORRECT",
        "error": "output 0: 50% of elements differ (max abs diff 2.7)"})
    value = only_json(chat(server, system, prompt)[0])
    check_kernel_source(value["code"])
    assert re.findall(r"cdiv\(n, (\d+)\)", value["code"]) == ["512"]
    assert re.findall(r"BLOCK=(\d+)", value["code"]) == ["512"]
    assert "VERDICT_INCORRECT" in value["explanation"]


def test_first_kernel_matches_the_reference(server, recorded, tmp_path, monkeypatch):
    system, prompts = recorded
    prompt = prompts["first_kernel"]
    value = only_json(chat(server, system, prompt)[0])
    check_kernel_source(value["code"])
    assert "aten::sigmoid" in value["explanation"]
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    monkeypatch.setenv("KAGENT_PROBLEM_SCALE", "300")
    problem_src = prompt.split("```python\n", 1)[1].split("\n```\n", 1)[0]

    def load(name, source):
        path = tmp_path / f"{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod

    problem, kernel = load("problem_fk", problem_src), load("kernel_fk", value["code"])
    x = problem.get_inputs()
    want = problem.Model(*problem.get_init_inputs())(*x)
    got = kernel.ModelNew(*problem.get_init_inputs())(*x)
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    # The fast-math fix on that kernel: exp as exp2, the same outputs.
    prompt2 = render("rewrite_kernel", {
        "gpu": "NVIDIA H200", "problem_source": problem_src, "kernel_source": value["code"],
        "kernel_knobs": "BLOCK, num_warps", "measured": "current kernel: 1 ms median",
        "diagnosis": "category: compute-bound", "lessons": "none",
        "fix_title": "exp2 with a folded log2(e) and fast reciprocals",
        "fix_description": "pattern: fast-math-exp2\nfix: use exp2 with log2(e) folded in\n"
                           "knob changes: USE_EXP2 = true"})
    code, prose = fenced_kernel(chat(server, system, prompt2)[0])
    check_kernel_source(code)
    assert "tl.exp(" in value["code"] and "tl.exp(" not in code
    assert "tl.exp2(1.4426950408889634 * (-x))" in code and "USE_EXP2" in prose
    got2 = load("kernel_fk2", code).ModelNew(*problem.get_init_inputs())(*x)
    torch.testing.assert_close(got2, want, rtol=1e-5, atol=1e-5)
    # An op it has no kernel for: no code, and the explanation names the op.
    other = prompt.replace("- aten::sigmoid:", "- aten::cumsum:")
    value = only_json(chat(server, system, other)[0])
    assert value["code"] == "" and "aten::cumsum" in value["explanation"]


def test_errors_in_vllm_shape_and_the_log(server, recorded):
    system, prompts = recorded
    status, body = call(server, "POST", "/v1/chat/completions",
                        {"model": MODEL, "messages": [{"role": "user", "content": "Hello"}]})
    assert status == 400 and body["object"] == "error"
    assert "does not recognise this prompt" in body["message"] and "'Hello'" in body["message"]
    status, body = call(server, "POST", "/v1/chat/completions",
                        {"model": "gpt-9", "messages": [{"role": "user", "content": "x"}]})
    assert status == 404 and body["message"] == "The model `gpt-9` does not exist."
    status, body = call(server, "POST", "/v1/chat/completions", {"model": MODEL})
    assert status == 400 and "messages" in body["message"]
    # A prompt of a known agent that lacks what the agent reads: 400 naming what is missing.
    cut = prompts["reflect"].split("What was measured")[0]
    status, body = call(server, "POST", "/v1/chat/completions",
                        {"model": MODEL, "messages": [{"role": "user", "content": cut}]})
    assert status == 400 and "measured result" in body["message"]
    # max_tokens below the reply: cut there, finish_reason length.
    text, finish = chat(server, system, prompts["narrate"], max_tokens=10)
    assert finish == "length" and len(text) == 40
    with open(server["log"], encoding="utf-8") as f:
        log = [json.loads(line) for line in f]
    assert [e["seq"] for e in log] == list(range(1, len(log) + 1))
    last = log[-1]
    assert last["agent"] == "narrate" and last["status"] == 200 and last["reply"] == text
    assert last["request"]["max_tokens"] == 10
    assert any(e["status"] == 404 and e["reply"]["code"] == 404 for e in log)


def test_two_dimensional_grid_follows_the_knob_of_its_dimension(server, recorded):
    """problems/01's start kernel launches cdiv(M, 64) x cdiv(N, 64) with BLOCK_M = BLOCK_N
    = 64: the literal alone cannot say which knob a cdiv follows, its dimension can."""
    system, _ = recorded
    with open(os.path.join(REPO, "problems", "01_matmul_square_fp32_start.py")) as f:
        kernel = f.read()
    assert "grid = (triton.cdiv(M, 64), triton.cdiv(N, 64), nb)" in kernel
    prompt = render("rewrite_kernel", {
        "gpu": "NVIDIA H200", "problem_source": "# (the reference)", "kernel_source": kernel,
        "kernel_knobs": "BLOCK_M, BLOCK_N, BLOCK_K, IEEE, UPCAST, num_warps, num_stages",
        "measured": "current kernel: 1 ms median", "diagnosis": "category: latency-bound",
        "fix_title": "Smaller M tiles for more programs",
        "fix_description": "pattern: split-work-smaller-blocks\nknob changes: BLOCK_M = /2",
        "lessons": "none"})
    code, _ = fenced_kernel(chat(server, system, prompt)[0])
    check_kernel_source(code)
    assert "grid = (triton.cdiv(M, 32), triton.cdiv(N, 64), nb)" in code
    assert "BLOCK_M=32, BLOCK_N=64, BLOCK_K=32" in code
    # The same change made without the grid, sent back as a failed kernel: repaired.
    broken = kernel.replace("BLOCK_M=64", "BLOCK_M=32")
    prompt = render("repair_kernel", {
        "gpu": "NVIDIA H200", "attempt": "1", "problem_source": "# (the reference)",
        "fix_title": "Smaller M tiles", "fix_description": "knob changes: BLOCK_M = /2",
        "kernel_source": broken, "verdict": "VERDICT_INCORRECT", "error": "outputs differ"})
    value = only_json(chat(server, system, prompt)[0])
    assert "grid = (triton.cdiv(M, 32), triton.cdiv(N, 64), nb)" in value["code"]
    assert value["code"].replace("cdiv(M, 32)", "cdiv(M, 64)") == broken
