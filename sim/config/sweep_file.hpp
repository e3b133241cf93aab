#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "config/run_spec.hpp"
#include "core/diagnostics.hpp"

namespace YAML {
class Node;
}

namespace podsim::config {

// The most configs one sweep file may expand to: at a few milliseconds per simulation, an hour or so
// of work on a workstation; larger explorations are several sweeps (or --shard).
inline constexpr std::size_t kMaxSweepConfigs = 1'000'000;

// A sweep (schema podsim.sweep/v1): a base run config and axes over dotted paths into it, expanded
// as a cartesian product (zip groups vary together). Instances are built on demand, so a sweep of
// millions of configs costs no memory up front. Not thread-safe: build instances on one thread.
class SweepPlan {
  public:
    static SweepPlan load(const std::string& path);
    // A sweep given as text; a `base:` path and bare names resolve against `base_dir`.
    static SweepPlan load_text(const std::string& yaml_text, const std::string& name,
                               const std::filesystem::path& base_dir);
    SweepPlan(SweepPlan&&) noexcept;
    SweepPlan& operator=(SweepPlan&&) noexcept;
    ~SweepPlan();

    std::size_t size() const;
    const std::vector<std::string>& parameter_names() const;  // dotted paths, one per swept key
    // The axes in file order (the first varies slowest in the index): the paths each sets (several
    // for a zip group) and its number of values.
    struct AxisShape {
        std::vector<std::string> paths;
        std::size_t size = 0;
    };
    std::vector<AxisShape> axis_shapes() const;

    struct Instance {
        bool ok = false;
        RunSpec spec;
        std::string skip_reason;          // when !ok: the config errors, on one line
        std::vector<std::string> values;  // one per parameter name, flow YAML
        std::string run_yaml;             // the full run config of this instance, when asked for
    };
    Instance make(std::size_t index, bool with_run_yaml = false) const;
    // The swept values of config `index` (Instance::values) without building it.
    std::vector<std::string> values_of(std::size_t index) const;
    // What the configs are made of (the base config, every axis's paths and values) as 16 hex
    // digits: sweeps with the same fingerprint expand to the same configs.
    std::string fingerprint() const;
    // make(index) when the instance differs from `neighbour` (made from `neighbour_index`) only in
    // axes that set the batch: the neighbour's spec is then copied and only the batch and the checks
    // that involve it are read again (config::reparse_batch), a fraction of a whole parse.
    Instance make_beside(std::size_t index, std::size_t neighbour_index, const Instance& neighbour) const;

    struct Expression {
        std::string text;
        core::SourceLocation location;
    };
    const std::vector<Expression>& keep() const;
    const Expression& sort() const;  // "-mfu" (descending) or "step_time_s" (ascending); default -mfu
    const std::string& file() const;
    const std::string& name() const;

  private:
    struct Impl;
    explicit SweepPlan(std::unique_ptr<Impl> impl);
    std::vector<std::size_t> choices(std::size_t index) const;  // each axis's value index
    Instance make_instance(std::size_t index, const std::vector<std::size_t>& choice, bool with_run_yaml,
                           const RunSpec* batch_neighbour) const;
    static SweepPlan load_tree(const YAML::Node& root, const std::string& file,
                               const std::filesystem::path& dir);
    std::unique_ptr<Impl> impl_;
};

}  // namespace podsim::config
