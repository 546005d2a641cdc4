"""Renders a template of engines/heuristic/templates the way the C++ renderer does.

Mirrors kagent::TemplateLibrary: first every include line (indentation, then
`{{> name}}`) is replaced by the lines of templates/partials/<name>.py, each prefixed with
that indentation (empty lines stay empty); an unknown partial, a partial that includes
another, a malformed include line or a partial's placeholder the template does not
declare is an error. Then every `{{NAME}}` is replaced by the value given for NAME, else
the param's default from <id>.json; a value must respect the param's declared type and
bounds; an unknown param or a placeholder left unresolved is an error.
When the C++ CLI `kagent-template-render` is found (env KAGENT_TEMPLATE_RENDER), it is
used instead so the two cannot drift.
"""
import json
import os
import re
import subprocess
import types

TEMPLATES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "templates")
REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", ".."))


def cli_binary():
    """The C++ kagent-template-render: $KAGENT_TEMPLATE_RENDER, else the first one built
    under build/, build-test/ or build-heur/; None when there is none."""
    env = os.environ.get("KAGENT_TEMPLATE_RENDER")
    if env:
        return env
    for build in ("build", "build-test", "build-heur"):
        path = os.path.join(REPO, build, "engines", "heuristic", "kagent-template-render")
        if os.path.exists(path):
            return path
    return None
_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}")
_INCLUDE = re.compile(r"( *)\{\{> *([A-Za-z0-9_]+) *\}\}")
_ANY_PLACEHOLDER = re.compile(r"\{\{(.*?)\}\}", re.S)


def load_meta(template_id):
    with open(os.path.join(TEMPLATES, template_id + ".json")) as f:
        return json.load(f)


def expand_includes(template_id, text, specs):
    """`text` (the template's source) with its include lines replaced by the partials."""
    out = []
    lines = text.split("\n")
    for n, line in enumerate(lines, 1):
        m = _INCLUDE.fullmatch(line)
        if m is None:
            if "{{>" in line:
                raise ValueError(f"{template_id}.py:{n}: malformed include {line!r}: an include "
                                 "is a line of its own, indentation then {{> name}}")
            out.append(line)
            continue
        indent, name = m.groups()
        where = f"{template_id}.py:{n}: partial '{name}' (partials/{name}.py)"
        path = os.path.join(TEMPLATES, "partials", name + ".py")
        if not os.path.isfile(path):
            raise ValueError(f"{template_id}.py:{n}: unknown partial '{name}' (no partials/{name}.py)")
        with open(path) as f:
            body = f.read()
        if "{{>" in body:
            raise ValueError(f"{where} includes a partial: partials cannot include partials")
        if not body:
            raise ValueError(f"{where} is empty")
        for ph in _ANY_PLACEHOLDER.findall(body):
            if ph not in specs:
                raise ValueError(f"{where}: placeholder {{{{{ph}}}}} has no param in {template_id}.json")
        if body.endswith("\n"):
            body = body[:-1]
        out += [indent + l if l else "" for l in body.split("\n")]
    return "\n".join(out)


def _check(name, spec, value):
    kind = spec["type"]
    if kind in ("int", "pow2"):
        v = int(value)
        if v < spec["min"] or v > spec["max"]:
            raise ValueError(f"{name}={v} outside [{spec['min']}, {spec['max']}]")
        if kind == "pow2" and v & (v - 1):
            raise ValueError(f"{name}={v} is not a power of two")
        return str(v)
    if kind == "float":
        return repr(float(value))
    if kind == "choice":
        if str(value) not in spec["allowed"]:
            raise ValueError(f"{name}={value} not in {spec['allowed']}")
        return str(value)
    raise ValueError(f"unknown param type {kind}")


def render(template_id, **params):
    binary = os.environ.get("KAGENT_TEMPLATE_RENDER")
    if binary:
        args = [binary, template_id] + [f"{k}={v}" for k, v in params.items()]
        return subprocess.run(args, check=True, capture_output=True, text=True).stdout
    meta = load_meta(template_id)
    specs = meta["params"]
    for k in params:
        if k not in specs:
            raise ValueError(f"unknown param {k} for {template_id}")
    values = {k: _check(k, s, params.get(k, s["default"])) for k, s in specs.items()}
    with open(os.path.join(TEMPLATES, template_id + ".py")) as f:
        text = expand_includes(template_id, f.read(), specs)
    out = _PLACEHOLDER.sub(lambda m: values[m.group(1)] if m.group(1) in values else m.group(0), text)
    left = _PLACEHOLDER.findall(out)
    if left:
        raise ValueError(f"unresolved placeholders {left}")
    return out


def exec_source(source, name):
    """Executes a candidate source as module `name`, from a file (Triton's jit reads the
    kernels' text through inspect); returns the module."""
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                        f"kagent_{name}_{os.getpid()}_{abs(hash(source))}.py")
    with open(path, "w") as f:
        f.write(source)
    module = types.ModuleType(name)
    module.__file__ = path
    exec(compile(source, path, "exec"), module.__dict__)
    return module


def load_model_new(template_id, **params):
    """Renders and executes the candidate source; returns its ModelNew class."""
    return exec_source(render(template_id, **params), f"candidate_{template_id}").ModelNew
