#pragma once

#include <array>
#include <string_view>

#include "config/whole_run_keys.hpp"
#include "core/key.hpp"
#include "hardware/topology_keys.hpp"

namespace podsim::config {

// The top-level, mesh and report keys of podsim.run/v1; its `training:` and `runtime:` keys are
// declared with their specs (workload/training_keys.hpp, parallel/runtime_keys.hpp), and
// run_schema() (schema.cpp) joins them. Adding a key: one line here (its default, bounds and help
// live nowhere else), then read it in config/run.cpp with MapReader's Key overloads and give the
// RunSpec member its default from run_key("...").
using core::KeyKind;
inline constexpr std::array<std::string_view, 2> kCustomMeshNames = {"hybrid_ring_64x4", "hybrid_ring_32x8"};
inline constexpr core::Key kRunKeys[] = {
    {.path = "schema", .required = true, .help = "must be podsim.run/v1"},
    {.path = "name", .default_note = "file name", .help = "name shown in reports"},
    {.path = "description", .help = "free text"},
    {.path = "notes", .help = "free text"},
    {.path = "model",
     .kind = KeyKind::mapping,
     .required = true,
     .help = "a name in models/, a path relative to this file, or an inline podsim.model/v1 mapping",
     .type = "name | path | mapping"},
    {.path = "topology",
     .kind = KeyKind::mapping,
     .required = true,
     .help = "a name in topologies/, a path relative to this file, or an inline podsim.topology/v1 mapping",
     .type = "name | path | mapping"},
    {.path = "slice",
     .kind = KeyKind::shape,
     .required = true,
     .minimum = 1,
     .maximum = hardware::kMaxSliceChips,
     .help = "physical shape of one slice in chips, e.g. 2x2x1 or 4x4x8"},
    {.path = "slices",
     .kind = KeyKind::integer,
     .unit = "slices",
     .default_value = 1,
     .minimum = 1,
     .maximum = 4096,
     .help = "slices joined over DCN",
     .source = "about 20x the largest multislice job published (50,944 TPU v5e chips in 199 slices, 2023)"},
    {.path = "twisted_torus",
     .kind = KeyKind::boolean,
     .help = "twisted wraparound for n x n x 2n and n x 2n x 2n slices where the topology allows it"},
    {.path = "mesh",
     .kind = KeyKind::mapping,
     .required = true,
     .help =
         "logical axes: shorthand {fsdp: 4} for one slice, {ici: {...}, dcn: {...}}, or MaxText's keys "
         "({ici_fsdp_parallelism: 64, dcn_data_parallelism: 2}, -1 for auto); axis names as `podsim explain "
         "parallelism` lists them; one size per level may be auto"},
    {.path = "mesh.ici",
     .kind = KeyKind::mapping,
     .default_note = "(required in long form)",
     .help = "axes inside a slice in order (last = most local); product = chips per slice"},
    {.path = "mesh.dcn",
     .kind = KeyKind::mapping,
     .help = "axes across slices; product = slices (e.g. {data: 2})"},
    {.path = "mesh.mapping",
     .kind = KeyKind::mapping,
     .default_note = "create_device_mesh",
     .help = "explicit placement of ICI axes on torus dimensions, e.g. {tensor: [z], fsdp: [x, y]}"},
    {.path = "mesh.custom_mesh",
     .kind = KeyKind::choice,
     .choices = kCustomMeshNames,
     .default_note = "(none)",
     .help =
         "(MaxText custom_mesh) on a 16x16 slice, hybrid_ring_64x4 puts the ICI axis of 4 on 2x2 blocks of "
         "chips (a ring of 4 each) and the axis of 64 across the blocks; hybrid_ring_32x8 an axis of 8 on "
         "2x4 "
         "blocks",
     .source = "MaxText max_utils.py create_custom_device_mesh, reshape_mesh_to_rings"},
    {.path = "mesh.<axis>",
     .kind = KeyKind::integer,
     .unit = "chips",
     .default_note = "auto",
     .minimum = 1,
     .maximum = hardware::kMaxSliceChips,
     .help =
         "size of one axis (in mesh, mesh.ici or mesh.dcn); the product of a level is its chips or slices"},
    {.path = "training",
     .kind = KeyKind::mapping,
     .required = true,
     .help = "batch, sequence, dtypes, optimizer, remat"},
    {.path = "runtime", .kind = KeyKind::mapping, .help = "how the framework runs the step"},
    {.path = "report", .kind = KeyKind::mapping, .help = "report options"},
    {.path = "report.mfu_attention",
     .kind = KeyKind::boolean,
     .help = "count attention FLOPs in MFU (PaLM appendix B convention)"},
    {.path = "calibration",
     .kind = KeyKind::mapping,
     .help = "overrides of cost-model parameters by name (see `podsim explain calibration`), or a "
             "podsim.calibration/v1 file",
     .type = "mapping | path"},
};

consteval const core::Key& run_key(std::string_view path) {
    return core::find_key(kRunKeys, path);
}

// podsim.validation/v1: a published measurement and the config that reproduces it.
inline constexpr core::Key kValidationCaseKeys[] = {
    {.path = "schema", .required = true, .help = "must be podsim.validation/v1"},
    {.path = "id", .required = true, .help = "case identifier"},
    {.path = "source", .required = true, .help = "where the measurement was published, down to the table"},
    {.path = "notes", .help = "what was measured and how the config was derived"},
    {.path = "run",
     .kind = KeyKind::mapping,
     .required = true,
     .help = "the podsim.run/v1 config of the measured run"},
    {.path = "measured",
     .kind = KeyKind::mapping,
     .default_note = "(required unless profile gives them)",
     .help =
         "measured values: step_time_s, mfu_6n, all_reduce_fraction, xla_peak_bytes, xla_parameter_bytes, "
         "derived"},
    {.path = "profile",
     .default_note = "none",
     .help = "a file of XLA's own numbers that gives the measured values, relative to the case: FILE#NAME "
             "for an entry of a JSON-lines file of memory_analysis() (xla_peak_bytes, and whether the step "
             "fitted), or a compiled FILE.hlo.pb(.gz) (xla_peak_bytes, xla_parameter_bytes)"},
    {.path = "tolerance",
     .kind = KeyKind::mapping,
     .required = true,
     .help = "step_time_rel, all_reduce_fraction_abs, xla_peak_bytes_rel, xla_parameter_bytes_rel"},
    {.path = "expected_miss", .help = "why the model misses this case today; the case then must miss"},
};

// podsim.collective-validation/v1: one measured collective on a slice.
inline constexpr core::Key kCollectiveCaseKeys[] = {
    {.path = "schema", .required = true, .help = "must be podsim.collective-validation/v1"},
    {.path = "id", .required = true, .help = "case identifier"},
    {.path = "source", .required = true, .help = "where the measurement was published"},
    {.path = "setup", .help = "how the measurement was set up"},
    {.path = "predicted_by_source",
     .kind = KeyKind::mapping,
     .help = "the source's own estimates (informational)"},
    {.path = "topology", .required = true, .help = "a name in topologies/ or a path"},
    {.path = "slice",
     .kind = KeyKind::shape,
     .required = true,
     .minimum = 1,
     .maximum = hardware::kMaxSliceChips,
     .help = "physical shape of the slice"},
    {.path = "mesh", .required = true, .help = "mesh axes, e.g. fsdp=16,tensor=4 (names are free)"},
    {.path = "op",
     .required = true,
     .help = "all-gather, reduce-scatter, all-reduce, all-to-all, collective-permute"},
    {.path = "axis", .required = true, .help = "the mesh axis the collective runs over"},
    {.path = "bytes",
     .kind = KeyKind::quantity,
     .dimension = core::Dimension::bytes,
     .default_note = "(required without pod_viewer)",
     .positive = true,
     .help = "the full array"},
    {.path = "measured",
     .kind = KeyKind::mapping,
     .default_note = "(required without pod_viewer)",
     .help = "{time: ...} the measured time of one collective"},
    {.path = "measured.time",
     .kind = KeyKind::quantity,
     .dimension = core::Dimension::time,
     .required = true,
     .help = "measured time of one collective"},
    {.path = "pod_viewer",
     .default_note = "(or bytes and measured)",
     .help = "an XProf pod-viewer JSON file whose all-reduces are each compared"},
    {.path = "tolerance", .kind = KeyKind::mapping, .help = "how far the prediction may be"},
    {.path = "tolerance.rel",
     .kind = KeyKind::number,
     .unit = "fraction",
     .default_value = 0,
     .minimum = 0,
     .help = "relative tolerance"},
    {.path = "tolerance.abs",
     .kind = KeyKind::quantity,
     .dimension = core::Dimension::time,
     .default_value = 0,
     .help = "absolute tolerance"},
    {.path = "tolerance.median_rel",
     .kind = KeyKind::number,
     .unit = "fraction",
     .default_value = 0,
     .minimum = 0,
     .help = "relative tolerance on the median over a pod-viewer file's all-reduces"},
    {.path = "expected_miss", .help = "why the model misses this case today; the case then must miss"},
};

// podsim.calibration/v1: fitted cost-model parameters (`podsim calibrate --out`).
inline constexpr core::Key kCalibrationFileKeys[] = {
    {.path = "schema", .required = true, .help = "must be podsim.calibration/v1"},
    {.path = "name", .help = "name of the fit"},
    {.path = "source", .help = "what the parameters were fitted to"},
    {.path = "notes", .help = "free text"},
    {.path = "parameters",
     .kind = KeyKind::mapping,
     .help = "cost-model parameters by name (`podsim explain calibration`)"},
    {.path = "fit", .kind = KeyKind::mapping, .help = "residuals of the fit (informational)"},
};

// podsim.sweep/v1: many run configs from one base.
inline constexpr core::Key kSweepFileKeys[] = {
    {.path = "schema", .required = true, .help = "must be podsim.sweep/v1"},
    {.path = "name", .default_note = "file name", .help = "name of the sweep"},
    {.path = "description", .help = "free text"},
    {.path = "notes", .help = "free text"},
    {.path = "base",
     .kind = KeyKind::mapping,
     .required = true,
     .help = "the run config every variant starts from",
     .type = "path | mapping"},
    {.path = "axes",
     .kind = KeyKind::mapping,
     .help = "dotted run-config paths to lists of values; the sweep is their cartesian product"},
    {.path = "zip", .kind = KeyKind::list, .help = "groups of axes that vary together instead of crossing"},
    {.path = "keep",
     .kind = KeyKind::list,
     .help = "expressions over report fields; rows failing one are dropped"},
    {.path = "sort", .default_string = "-mfu", .help = "report field to rank by; prefix '-' for descending"},
};

}  // namespace podsim::config
