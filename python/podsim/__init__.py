"""podsim from Python: predict a training step of a transformer on a TPU pod slice.

    import podsim
    report = podsim.run('configs/default.yaml', **{'training.global_batch': 256})
    report['step_time_s'], report['mfu'], report['memory']['fits']

Every function calls podsim's C++ library in this process (no subprocess) and releases the GIL
while it simulates, so threads may call it at once. Mistakes in a config raise ConfigError, whose
str() lists each one as FILE:LINE:COL: error: key.path: message and whose .diagnostics holds them
as dicts; a bug in podsim raises InternalError.
"""

import json
import numbers
import os
from collections.abc import Mapping

from . import _podsim
from ._podsim import ConfigError, InternalError

__all__ = ["run", "check", "trace", "run_hlo", "from_jax", "sweep", "collective", "validate", "explain",
           "ConfigError", "InternalError"]


def _source(config):
    """(text or path, is_file, name) of a config given as a dict, YAML text or a path."""
    if config is None:
        path = _podsim.default_config_path()
        if not path:
            raise ConfigError("no config given and no configs/default.yaml found "
                              "(set PODSIM_HOME to the directory that holds models/, topologies/ and configs/)")
        return path, True, path
    if isinstance(config, Mapping):
        # JSON is YAML; one key per line keeps the line numbers of messages useful.
        return json.dumps(config, indent=1), False, "<dict>"
    if isinstance(config, os.PathLike):
        return os.fspath(config), True, os.fspath(config)
    if isinstance(config, str):
        if "\n" in config or config.lstrip().startswith("{"):
            return config, False, "<text>"
        return config, True, config
    raise TypeError(f"config must be a dict, YAML text or a path, not {type(config).__name__}")


def _yaml_value(value):
    """A Python value as the YAML text of `--set key=value`."""
    if isinstance(value, str):
        return value
    return json.dumps(value)  # numbers, booleans, lists and dicts: JSON is YAML


def _overrides(overrides):
    return [(path, _yaml_value(value), f"override {path}={_yaml_value(value)}")
            for path, value in overrides.items()]


def run(config=None, /, **overrides):
    """Simulates one training step and returns the report (schema podsim.report/v1) as a dict; a
    config with a whole_run: block returns its run of many steps (schema podsim.whole-run/v1), as
    `podsim run --format json` does.

    config: a dict, YAML text, or a path (str or os.PathLike); None means configs/default.yaml.
    overrides: dotted paths of the run config, as `podsim run --set` and sweep axes name them:
        podsim.run('configs/default.yaml', **{'training.global_batch': 256, 'slice': '2x2x2',
                                              'mesh': {'fsdp': 8}})
    """
    report, _ = _podsim.run(*_source(config), _overrides(overrides), False)
    return json.loads(report)


def trace(config=None, /, **overrides):
    """The Chrome trace (Perfetto) of the simulated step (of the whole run with whole_run:) as a dict:
    `podsim run --trace`."""
    _, chrome_trace = _podsim.run(*_source(config), _overrides(overrides), True)
    return json.loads(chrome_trace)


def check(config=None, /, **overrides):
    """Checks a config without simulating; returns what it describes (name, model, slice, mesh...)."""
    return _podsim.check(*_source(config), _overrides(overrides))


def _whole(name, value):
    """An argument that counts something, as an int: a bool, a string or a number with a fraction is
    refused rather than truncated (int(1.5) would run a batch of 1)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a whole number, not {type(value).__name__} {value!r}")
    if not isinstance(value, numbers.Integral) and not float(value).is_integer():
        raise ValueError(f"{name} must be a whole number, not {value!r}")
    return int(value)


def _module(module):
    """(name, bytes) of a compiled module given as a path or as its HLO text (or proto bytes)."""
    if isinstance(module, os.PathLike):
        return os.fspath(module), b""
    if isinstance(module, bytes):
        return "<bytes>", module
    if isinstance(module, str):
        if "\n" in module or module.lstrip().startswith("HloModule"):
            return "<text>", module.encode()
        return module, b""
    raise TypeError(f"module must be a path, HLO text or bytes, not {type(module).__name__}")


def run_hlo(module, /, *, topology="tpu-v4", slice="1", device_order=None, model=None, global_batch=0,
            seq_len=0, model_flops=0.0, calibration=None, trace=False):
    """Simulates one step of a compiled XLA module (`podsim run MODULE`) and returns the report
    (schema podsim.report/v1) as a dict; with trace=True, (report, Chrome trace) as two dicts.

    module: a path (HLO text or HloProto, gzipped or not), or the HLO text itself (as
    compiled.as_text() gives it). topology: a name (tpu-v4, nvidia-h200, ...) or a file; slice: its
    shape ('1', '2x2x4'). device_order: 'mesh', 'devices' or a list of device indices (how the
    module's device ids sit on the slice). MFU: model (a podsim model, with global_batch and
    seq_len when the module does not tell them) or model_flops per step. calibration: a file,
    default the topology's own.
    """
    name, data = _module(module)
    if device_order is not None and not isinstance(device_order, str):
        device_order = ",".join(str(d) for d in device_order)
    report, chrome_trace = _podsim.run_hlo(name, data, os.fspath(topology), str(slice), device_order or "",
                                           os.fspath(model) if model else "",
                                           _whole("global_batch", global_batch),
                                           _whole("seq_len", seq_len), float(model_flops),
                                           os.fspath(calibration) if calibration else "", bool(trace))
    if trace:
        return json.loads(report), json.loads(chrome_trace)
    return json.loads(report)


def from_jax(compiled, /, **options):
    """Simulates a step JAX compiled ahead of time: `jax.jit(step).lower(...).compile()` (for a TPU
    topology, on a CPU host with libtpu: docs/hlo-import.md). Takes the module as compiled.as_text()
    gives it, so podsim never imports jax; options are run_hlo's (topology, slice, model, ...)."""
    as_text = getattr(compiled, "as_text", None)
    if not callable(as_text):
        raise TypeError("from_jax takes a compiled JAX computation (with as_text()), such as "
                        "jax.jit(f).lower(*args).compile()")
    text = as_text()
    if not isinstance(text, str) or not text.lstrip().startswith("HloModule"):
        raise ConfigError("compiled.as_text() did not give an HLO module")
    return run_hlo(text, **options)


def _value(text):
    """A swept value (flow YAML) as a Python number or bool where it is one: 256, 0.5, True, '2x2x4'."""
    if text in ("true", "false"):
        return text == "true"
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            pass
    return text


def sweep(sweep, jobs=None):
    """Runs a sweep (schema podsim.sweep/v1) and returns one row per config, in index order: a
    pandas.DataFrame when pandas is installed, else a list of dicts.

    sweep: a dict, YAML text or a path (a `base:` path in a dict or text resolves against the
    current directory). Columns: index, status ('ok' or 'skipped'), reason, one per swept key
    (its dotted path), then the columns of `podsim sweep`'s results.csv, typed (int, float, bool;
    None when unknown): name, chips, params, step_time_s, mfu, peak_bytes, fits, compute_s, ...,
    kept. explain('sweep') lists each with its unit and meaning. jobs: threads (default: cores).
    """
    parameters, rows = _podsim.sweep(*_source(sweep), _whole("jobs", jobs) if jobs is not None else 0)
    for row in rows:
        for name in parameters:
            row[name] = _value(row[name])
    try:
        import pandas
    except ImportError:
        return rows
    columns = ["index", "status", "reason", *parameters]
    frame = pandas.DataFrame(rows, columns=None if rows else columns)
    return frame[columns + [c for c in frame.columns if c not in columns]]


def collective(slice, *, topology="tpu-v4", mesh=None, op="all-gather", axis=None, bytes="64MiB",
               twisted=False):
    """Simulates one collective alone on a slice (`podsim collective`); returns a dict with time_s,
    closed_form_s, algorithm and bus bandwidth (bytes/s) and link utilisation.

    mesh: 'fsdp=16,tensor=4' or {'fsdp': 16, 'tensor': 4}; axis: a mesh axis or a list of them;
    bytes: the full array, as an int (bytes) or a quantity such as '64MiB'.
    """
    query = _podsim.CollectiveQuery()
    query.topology = os.fspath(topology)
    query.slice = slice
    if isinstance(mesh, Mapping):
        mesh = ",".join(f"{name}={size}" for name, size in mesh.items())
    query.mesh = mesh or ""
    query.op = op
    if axis is not None and not isinstance(axis, str):
        axis = ",".join(axis)
    query.axis = axis or ""
    query.bytes = f"{bytes} B" if isinstance(bytes, int) else str(bytes)
    query.twisted = twisted
    return json.loads(_podsim.collective(query))


def validate(suite="tests/validation"):
    """Runs the published cases of a podsim.validation/v1 directory (and its collectives/);
    returns `podsim validate --suite DIR --format json` as a dict."""
    return json.loads(_podsim.validate(os.fspath(suite)))


def explain(what="run"):
    """Every key of a schema (run, model, topology, calibration, ...) with type, default and help;
    'report' and 'sweep': every field of the report and of a sweep row with type, unit and meaning."""
    return _podsim.explain(what)
