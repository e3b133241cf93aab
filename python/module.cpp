// The extension behind the Python package `podsim` (python/podsim/__init__.py wraps it): each
// function takes plain strings, releases the GIL while podsim works, and returns JSON text or
// plain values. ConfigError carries the diagnostics; InternalError is a bug in podsim.
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "podsim/podsim.hpp"

namespace py = pybind11;

namespace {

// Owned by the module (its attributes); the translator only borrows them.
PyObject* config_error_type = nullptr;
PyObject* internal_error_type = nullptr;

using OverrideList = std::vector<std::tuple<std::string, std::string, std::string>>;  // path, value, origin

podsim::RunSpec load(const std::string& source, bool is_file, const std::string& name,
                     const OverrideList& given) {
    std::vector<podsim::Override> overrides;
    for (const auto& [path, value, origin] : given) overrides.push_back({path, value, origin});
    return is_file ? podsim::load_run(source, overrides) : podsim::load_run_text(source, overrides, name);
}

// Text from user files as a Python str: invalid UTF-8 becomes U+FFFD (as in the JSON outputs)
// instead of a UnicodeDecodeError.
py::str text_of(const std::string& s) {
    return py::reinterpret_steal<py::str>(
        PyUnicode_DecodeUTF8(s.data(), static_cast<Py_ssize_t>(s.size()), "replace"));
}

void translate(std::exception_ptr p) {
    try {
        if (p) std::rethrow_exception(p);
    } catch (const podsim::ConfigError& e) {
        py::list diagnostics;
        std::string text;
        for (const auto& item : e.diagnostics().items()) {
            py::dict d;
            d["file"] = item.location.file;
            d["line"] = item.location.line;
            d["column"] = item.location.column;
            d["key_path"] = item.key_path;
            d["message"] = item.message;
            d["text"] = item.to_string();
            diagnostics.append(d);
            text += (text.empty() ? "" : "\n") + item.to_string();
        }
        py::object error = py::reinterpret_borrow<py::object>(config_error_type)(text);
        error.attr("diagnostics") = diagnostics;
        PyErr_SetObject(config_error_type, error.ptr());
    } catch (const podsim::InternalError& e) {
        PyErr_SetString(internal_error_type, e.what());
    }
}

}  // namespace

PYBIND11_MODULE(_podsim, m) {
    m.doc() = "podsim's C++ API; use the package `podsim`, which wraps it";
    py::object config_error = py::reinterpret_steal<py::object>(
        PyErr_NewExceptionWithDoc("podsim.ConfigError",
                                  "A mistake in a config or an argument. str(e) lists every one as "
                                  "FILE:LINE:COL: error: key.path: message; e.diagnostics holds them as "
                                  "dicts (file, line, column, key_path, message, text).",
                                  PyExc_ValueError, nullptr));
    py::object internal_error = py::reinterpret_steal<py::object>(PyErr_NewExceptionWithDoc(
        "podsim.InternalError", "A bug in podsim (please report it), never a user mistake.",
        PyExc_RuntimeError, nullptr));
    m.attr("ConfigError") = config_error;
    m.attr("InternalError") = internal_error;
    config_error_type = config_error.ptr();
    internal_error_type = internal_error.ptr();
    py::register_exception_translator(&translate);

    m.def(
        "run",
        [](const std::string& source, bool is_file, const std::string& name, const OverrideList& overrides,
           bool trace) {
            py::gil_scoped_release release;
            podsim::RunSpec spec = load(source, is_file, name, overrides);
            if (spec.whole_run) {
                // A run of many steps: its document, as `podsim run --format json` prints it.
                const podsim::WholeRun whole = podsim::simulate_whole_run(spec);
                return std::make_pair(podsim::whole_run_json(whole),
                                      trace ? podsim::whole_run_trace(whole) : std::string());
            }
            podsim::Simulation simulation = podsim::simulate(spec, podsim::SimulateOptions{.fold = !trace});
            return std::make_pair(podsim::report_json(simulation.report),
                                  trace ? podsim::chrome_trace(spec, simulation) : std::string());
        },
        py::arg("source"), py::arg("is_file"), py::arg("name"), py::arg("overrides"), py::arg("trace"));

    m.def(
        "run_hlo",
        [](const std::string& name, const py::bytes& data, const std::string& topology,
           const std::string& slice, const std::string& device_order, const std::string& model,
           long global_batch, long seq_len, double model_flops, const std::string& calibration, bool trace) {
            podsim::ModuleRunRequest request;
            request.path = name;
            request.bytes = std::string(data);  // empty: read the file `name`
            request.topology = topology;
            request.slice = slice;
            request.device_order = device_order;
            request.model = model;
            request.global_batch = global_batch;
            request.seq_len = seq_len;
            request.model_flops = model_flops;
            request.calibration = calibration;
            py::gil_scoped_release release;
            podsim::ModuleRun run = podsim::run_module(request);
            return std::make_pair(podsim::report_json(run.simulation.report),
                                  trace ? podsim::module_trace(run) : std::string());
        },
        py::arg("name"), py::arg("data"), py::arg("topology"), py::arg("slice"), py::arg("device_order"),
        py::arg("model"), py::arg("global_batch"), py::arg("seq_len"), py::arg("model_flops"),
        py::arg("calibration"), py::arg("trace"));

    m.def(
        "check",
        [](const std::string& source, bool is_file, const std::string& name, const OverrideList& overrides) {
            podsim::RunSpec spec;
            {
                py::gil_scoped_release release;
                spec = load(source, is_file, name, overrides);
            }
            py::dict out;
            out["name"] = spec.name;
            out["model"] = spec.model.name;
            out["topology"] = spec.topology.name;
            out["slice"] = spec.slice.to_string();
            out["slices"] = spec.slices;
            out["chips"] = spec.slice.chips() * spec.slices;
            out["mesh"] = spec.mesh.to_string();
            out["global_batch"] = spec.training.global_batch;
            return out;
        },
        py::arg("source"), py::arg("is_file"), py::arg("name"), py::arg("overrides"));

    m.def(
        "collective",
        [](const podsim::CollectiveQuery& query) {
            py::gil_scoped_release release;
            auto request = podsim::collective_request(query);
            return podsim::collective_json(request, podsim::run_collective(request));
        },
        py::arg("query"));
    py::class_<podsim::CollectiveQuery>(m, "CollectiveQuery")
        .def(py::init<>())
        .def_readwrite("topology", &podsim::CollectiveQuery::topology)
        .def_readwrite("slice", &podsim::CollectiveQuery::slice)
        .def_readwrite("mesh", &podsim::CollectiveQuery::mesh)
        .def_readwrite("op", &podsim::CollectiveQuery::op)
        .def_readwrite("axis", &podsim::CollectiveQuery::axis)
        .def_readwrite("bytes", &podsim::CollectiveQuery::bytes)
        .def_readwrite("twisted", &podsim::CollectiveQuery::twisted);

    m.def(
        "sweep",
        [](const std::string& source, bool is_file, const std::string& name, int jobs) {
            std::vector<podsim::SweepRow> rows;
            std::vector<std::string> parameters;
            {
                py::gil_scoped_release release;
                podsim::SweepPlan plan =
                    is_file ? podsim::load_sweep(source) : podsim::load_sweep_text(source, name);
                parameters = plan.parameter_names();
                podsim::SweepOptions options;
                options.jobs = jobs;
                options.progress = false;
                options.top = 1;
                podsim::run_sweep(plan, options, [&](const podsim::SweepRow& row) { rows.push_back(row); });
            }
            py::list out;
            for (const auto& r : rows) {
                py::dict d;
                d["index"] = r.index;
                d["status"] = r.ok ? "ok" : "skipped";
                d["reason"] = text_of(r.reason);
                for (std::size_t i = 0; i < parameters.size() && i < r.values.size(); ++i)
                    d[text_of(parameters[i])] = text_of(r.values[i]);
                if (r.ok) {
                    // The sweep columns of the report registry (`podsim explain sweep`), typed.
                    const auto fields = podsim::report::sweep_fields();
                    for (std::size_t i = 0; i < fields.size(); ++i) {
                        const auto& f = *fields[i];
                        py::str key(f.name().data(), f.name().size());
                        const double v = r.number(i);
                        if (f.type == podsim::report::FieldType::text) {
                            d[key] = text_of(r.texts[i]);
                        } else if (std::isnan(v)) {
                            d[key] = py::none();
                        } else if (f.type == podsim::report::FieldType::boolean) {
                            d[key] = v != 0.0;
                        } else if (f.type == podsim::report::FieldType::integer &&
                                   std::fabs(v) < 9007199254740992.0) {
                            d[key] = static_cast<long long>(v);
                        } else {
                            d[key] = v;
                        }
                    }
                    d["kept"] = r.kept;
                }
                out.append(d);
            }
            return py::make_tuple(parameters, out);
        },
        py::arg("source"), py::arg("is_file"), py::arg("name"), py::arg("jobs"));

    m.def(
        "validate",
        [](const std::string& directory) {
            py::gil_scoped_release release;
            return podsim::validation_json(podsim::validate_suite(directory));
        },
        py::arg("directory"));

    m.def(
        "explain",
        [](const std::string& what) {
            py::gil_scoped_release release;
            return podsim::explain(what);
        },
        py::arg("what"));
    m.def("explainable", &podsim::explainable);
    m.def("default_config_path", [] {
        auto p = podsim::default_config_path();
        return p ? p->string() : std::string();
    });
}
