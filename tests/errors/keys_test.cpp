#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/schema.hpp"
#include "config/sweep_file.hpp"
#include "support.hpp"

// Every key is declared once (core::Key tables); `podsim explain` prints the declaration and the
// loader enforces it. These tests hold the two to each other for every key of every schema: an
// absent key loads exactly as the default explain prints, values just outside the printed range
// are errors at the key, values at its edge are not. They read the declarations, so a new key is
// covered the moment it is declared.

using namespace podsim;
namespace fs = std::filesystem;

namespace {

// A config as dotted path -> YAML value, rendered as nested blocks (whole_run.eval.steps is three
// levels deep).
using Flat = std::map<std::string, std::string>;

std::string render(const Flat& flat, const std::string& indent = "") {
    std::string out;
    std::map<std::string, Flat> blocks;  // first component -> the rest of the paths below it
    for (const auto& [path, value] : flat) {
        auto dot = path.find('.');
        if (dot == std::string::npos) {
            out += fmt::format("{}{}: {}\n", indent, path, value);
        } else {
            blocks[path.substr(0, dot)][path.substr(dot + 1)] = value;
        }
    }
    for (const auto& [block, below] : blocks) out += indent + block + ":\n" + render(below, indent + "  ");
    return out;
}

// Writes the text to a file of its own (model and topology loaders read files).
std::string write_temp(const std::string& text, const std::string& stem) {
    static int counter = 0;
    static const fs::path dir = [] {
        fs::path made = test::fresh_dir("keys");
        fs::create_directories(made);
        return made;
    }();
    fs::path p = dir / fmt::format("{}-{}.yaml", stem, counter++);
    std::ofstream(p) << text;
    return p.string();
}

const Flat kRunBase = {{"schema", "podsim.run/v1"}, {"model", "gpt2-small"}, {"topology", "tpu-v4"},
                       {"slice", "2x2x1"},          {"mesh", "{fsdp: 4}"},   {"training.global_batch", "8"},
                       {"training.seq_len", "1024"}};
// A whole run needs train_steps or eval.steps: one base with each, so that either key's own default
// (0) can be checked on the other.
Flat with_key(Flat base, const std::string& path, const std::string& value) {
    base[path] = value;
    return base;
}
const Flat kWholeRunTrainBase = with_key(kRunBase, "whole_run.train_steps", "3");
const Flat kWholeRunEvalBase = with_key(kRunBase, "whole_run.eval.steps", "2");
const Flat kTextModelBase = {{"schema", "podsim.model/v1"},
                             {"name", "m"},
                             {"family", "gpt2"},
                             {"layers", "2"},
                             {"d_model", "64"},
                             {"heads", "4"},
                             {"vocab", "100"},
                             {"max_positions", "1024"}};
const Flat kVitModelBase = {{"schema", "podsim.model/v1"},
                            {"name", "v"},
                            {"family", "vit"},
                            {"layers", "2"},
                            {"d_model", "64"},
                            {"heads", "4"},
                            {"image_size", "32"},
                            {"patch_size", "4"},
                            {"num_classes", "10"}};
const Flat kTopologyBase = {{"schema", "podsim.topology/v1"},
                            {"name", "t"},
                            {"chip.peak_flops", "{bf16: 100 TFLOP/s}"},
                            {"chip.hbm_capacity", "16 GiB"},
                            {"chip.hbm_bandwidth", "1 TB/s"},
                            {"ici.link_bandwidth", "45 GB/s"},
                            {"ici.hop_latency", "1 us"},
                            {"ici.max_slice", "4x4x4"}};

// One schema the loader can read from a flat config: its bases (a key is checked on each base
// that takes it) and whether two loads agree.
struct SchemaCase {
    std::string name;  // as `podsim explain` takes it
    std::vector<Flat> bases;
    // Whether two configs load to equal specs (both must load).
    std::function<bool(const Flat&, const Flat&)> same;
    std::function<void(const Flat&)> load;
};

std::vector<SchemaCase> schema_cases() {
    auto run = [](const Flat& f) { return test::run_from_text(render(f)); };
    auto model = [](const Flat& f) { return config::load_model_file(write_temp(render(f), "model")); };
    auto topology = [](const Flat& f) {
        return config::load_topology_file(write_temp(render(f), "topology"));
    };
    return {
        {"run",
         {kRunBase, kWholeRunTrainBase, kWholeRunEvalBase},
         [run](const Flat& a, const Flat& b) { return run(a) == run(b); },
         [run](const Flat& f) { run(f); }},
        {"model",
         {kTextModelBase, kVitModelBase},
         [model](const Flat& a, const Flat& b) { return model(a) == model(b); },
         [model](const Flat& f) { model(f); }},
        {"topology",
         {kTopologyBase},
         [topology](const Flat& a, const Flat& b) { return topology(a) == topology(b); },
         [topology](const Flat& f) { topology(f); }},
    };
}

std::optional<core::Diagnostics> load_errors(const SchemaCase& schema, const Flat& flat) {
    try {
        schema.load(flat);
    } catch (const core::UserError& e) {
        return e.diagnostics();
    }
    return std::nullopt;
}

// Where a key's value goes in the flat config, and the path its errors are reported at.
std::pair<std::string, std::string> placement(const core::Key& key) {
    if (key.path == "chip.peak_flops") return {"chip.peak_flops", "chip.peak_flops.bf16"};
    if (key.path == "mesh.<axis>") return {"mesh", "mesh.fsdp"};
    return {std::string(key.path), std::string(key.path)};
}

std::string value_text(const core::Key& key, double value) {
    std::string base_unit = key.kind != core::KeyKind::quantity           ? ""
                            : key.dimension == core::Dimension::bytes     ? " B"
                            : key.dimension == core::Dimension::time      ? " s"
                            : key.dimension == core::Dimension::bandwidth ? " B/s"
                            : key.dimension == core::Dimension::flop_rate ? " FLOP/s"
                                                                          : " Hz";
    std::string text = key.kind == core::KeyKind::quantity ? fmt::format("{:g}{}", value, base_unit)
                                                           : fmt::format("{}", static_cast<long long>(value));
    if (key.kind == core::KeyKind::shape) text += "x1x1";
    if (key.path == "chip.peak_flops") text = "{bf16: " + text + "}";
    if (key.path == "mesh.<axis>") text = "{fsdp: " + text + "}";
    return text;
}

bool has_error_at(const core::Diagnostics& d, const std::string& path, const std::string& words) {
    for (const auto& item : d.items())
        if (item.key_path == path && item.message.find(words) != std::string::npos) return true;
    return false;
}

// The line `podsim explain` prints for a key.
std::string explain_line(const std::string& schema, const core::Key& key) {
    std::istringstream in(config::explain(schema));
    std::string line;
    while (std::getline(in, line)) {
        std::string head = "  " + std::string(key.path) + " ";
        if (line.rfind(head, 0) == 0) return line;
    }
    return "";
}

}  // namespace

TEST_CASE("explain prints each key's declared default and range") {
    for (const char* schema : {"run", "model", "topology", "validation-case", "collective-case",
                               "calibration-file", "sweep-file"}) {
        for (const auto& key : *config::schema_named(schema)) {
            CAPTURE(schema);
            CAPTURE(key.path);
            std::string line = explain_line(schema, key);
            REQUIRE(!line.empty());
            CHECK(line.find("default: " + key.default_text()) != std::string::npos);
            if (key.bounded()) CHECK(line.find("range: " + key.bounds_text()) != std::string::npos);
            CHECK(!key.help.empty());
        }
    }
}

TEST_CASE("an absent key loads as the default explain prints") {
    for (const auto& schema : schema_cases()) {
        for (const auto& key : *config::schema_named(schema.name)) {
            if (!key.has_default()) continue;
            CAPTURE(key.path);
            int checked = 0;
            for (const auto& base : schema.bases) {
                Flat with = base;
                with[std::string(key.path)] = key.default_text();
                if (load_errors(schema, with)) continue;  // a key this base does not take (ViT only)
                Flat without = base;
                without.erase(std::string(key.path));
                CHECK(schema.same(with, without));
                ++checked;
            }
            CHECK(checked > 0);
        }
    }
}

TEST_CASE("values outside a key's printed range are errors at the key, its edges are not") {
    for (const auto& schema : schema_cases()) {
        for (const auto& key : *config::schema_named(schema.name)) {
            if (!key.bounded()) continue;
            CAPTURE(key.path);
            // Not a structured binding: clang 14 cannot capture those in the lambda below.
            const auto placed = placement(key);
            const auto& where = placed.first;
            const auto& error_path = placed.second;
            // The base that takes the key: ViT keys only on the ViT model.
            const Flat* base = nullptr;
            for (const auto& candidate : schema.bases) {
                Flat probe = candidate;
                // A valid value: the maximum, or just above the minimum when there is no maximum
                // (an infinite value cast to an integer is undefined behaviour).
                const double valid = std::isfinite(key.maximum)
                                         ? key.maximum
                                         : (std::isfinite(key.minimum) ? key.minimum : 0.0) + 1.0;
                if (key.path != "mesh.<axis>") probe[where] = value_text(key, valid);
                auto errors = load_errors(schema, probe);
                if (!errors || !has_error_at(*errors, error_path, "only ViT models")) {
                    base = &candidate;
                    break;
                }
            }
            REQUIRE(base != nullptr);
            auto set = [&](double value) {
                Flat f = *base;
                f[where] = value_text(key, value);
                return f;
            };
            if (key.maximum != std::numeric_limits<double>::infinity()) {
                // Above: 1.5x for quantities, +1 for counts.
                double above = key.kind == core::KeyKind::quantity ? key.maximum * 1.5 : key.maximum + 1;
                auto errors = load_errors(schema, set(above));
                REQUIRE(errors);
                CHECK(has_error_at(*errors, error_path, "must be at most"));
                auto at_edge = load_errors(schema, set(key.maximum));
                if (at_edge) CHECK_FALSE(has_error_at(*at_edge, error_path, "must be at most"));
            }
            if (key.positive) {
                auto errors = load_errors(schema, set(0));
                REQUIRE(errors);
                CHECK(has_error_at(*errors, error_path, "must be positive"));
            } else if (key.minimum != -std::numeric_limits<double>::infinity() &&
                       key.kind != core::KeyKind::quantity) {
                auto errors = load_errors(schema, set(key.minimum - 1));
                REQUIRE(errors);
                CHECK((has_error_at(*errors, error_path, "must be at least") ||
                       has_error_at(*errors, error_path, "must be positive") ||
                       has_error_at(*errors, error_path, "is not")));  // a shape of 0 chips does not parse
                auto at_edge = load_errors(schema, set(key.minimum));
                if (at_edge) CHECK_FALSE(has_error_at(*at_edge, error_path, "must be at least"));
            }
        }
    }
}

TEST_CASE("the defaults of the case and sweep schemas are the declared ones") {
    // Their loaders read directories and plans, not specs: each defaulted key is checked by hand,
    // and a newly declared default fails here until it is.
    const std::vector<std::string> covered = {"tolerance.rel", "tolerance.abs", "tolerance.median_rel",
                                              "sort"};
    for (const char* schema : {"validation-case", "collective-case", "calibration-file", "sweep-file"}) {
        for (const auto& key : *config::schema_named(schema)) {
            if (!key.has_default() || key.kind == core::KeyKind::list) continue;
            if (key.kind == core::KeyKind::text && key.default_string.empty()) continue;
            CAPTURE(key.path);
            CHECK(std::find(covered.begin(), covered.end(), std::string(key.path)) != covered.end());
        }
    }
    auto sweep_path =
        write_temp("schema: podsim.sweep/v1\nbase: " + test::source_path("configs/default.yaml") +
                       "\naxes: {training.microbatches: [1]}\n",
                   "sweep");
    auto plan = config::SweepPlan::load(sweep_path);
    for (const auto& key : config::sweep_file_schema())
        if (key.path == "sort") CHECK(plan.sort().text == key.default_text());
    fs::path dir = test::fresh_dir("keys-collectives");
    fs::create_directories(dir);
    std::ofstream(dir / "case.yaml")
        << "schema: podsim.collective-validation/v1\nid: c\nsource: s\n"
           "topology: tpu-v4\nslice: 4x4x4\nmesh: x=64\nop: all-gather\naxis: x\n"
           "bytes: 1 MiB\nmeasured: {time: 100 us}\ntolerance: {}\n";
    auto cases = config::load_collective_suite(dir.string());
    REQUIRE(cases.size() == 1);
    CHECK(cases[0].tolerance_rel == 0.0);
    CHECK(cases[0].tolerance_abs == 0.0);
    CHECK(cases[0].tolerance_median_rel == 0.0);
    fs::remove_all(dir);
}

TEST_CASE("no default of a declared key is written a second time in the specs or the loader") {
    // The spec structs take defaults from the declarations (e.g. topology_key("chip.mxu_tile")) and
    // the loader from MapReader's Key overloads; a literal next to a key's member name, or a
    // value_or(literal) in the loader, would be a second copy that can drift.
    const std::vector<std::string> spec_files = {
        "sim/workload/model_spec.hpp", "sim/workload/training_spec.hpp", "sim/parallel/runtime_spec.hpp",
        "sim/hardware/chip_spec.hpp",  "sim/hardware/topology_spec.hpp", "sim/config/run_spec.hpp",
        "sim/config/run_plan.hpp"};
    std::vector<std::string> loader_files;
    for (const auto& entry : fs::directory_iterator(test::source_path("sim/config")))
        if (entry.path().extension() == ".cpp") loader_files.push_back(entry.path().string());
    auto read = [](const std::string& path) {
        std::ifstream in(path);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    };
    const std::string literal = R"((-?[0-9][0-9.e+]*|true|false|"[^"]*"|[A-Za-z_:]+::[a-z_0-9]+))";
    for (const char* schema : {"run", "model", "topology"}) {
        for (const auto& key : *config::schema_named(schema)) {
            if (!key.has_default() || key.kind == core::KeyKind::text || key.kind == core::KeyKind::list)
                continue;
            CAPTURE(key.path);
            std::regex member("\\b" + std::string(key.name()) + R"(\s*=\s*)" + literal + R"(\s*;)");
            for (const auto& file : spec_files) {
                CAPTURE(file);
                CHECK_FALSE(std::regex_search(read(test::source_path(file)), member));
            }
            std::regex read_with_literal("\"" + std::string(key.name()) + R"("[^;]*value_or\(\s*)" + literal +
                                         R"(\s*\))");
            for (const auto& file : loader_files) {
                CAPTURE(file);
                CHECK_FALSE(std::regex_search(read(file), read_with_literal));
            }
        }
    }
}

TEST_CASE("whole_run keys give their defaults in the declaration, and the plan starts from them") {
    // Until the whole_run reader moved to the Key overloads its defaults were notes; now every key
    // with a constant default declares it, and a plan of only train_steps is RunPlan{} otherwise.
    int declared = 0;
    for (const auto& key : config::run_schema()) {
        if (std::string_view(key.path).rfind("whole_run.", 0) != 0) continue;
        if (key.has_default() && key.kind != core::KeyKind::list) ++declared;
    }
    CHECK(declared == 17);
    auto spec = test::run_from_text(render(kWholeRunTrainBase));
    REQUIRE(spec.whole_run.has_value());
    config::RunPlan expected;
    expected.train_steps = 3;
    CHECK(*spec.whole_run == expected);
    CHECK(expected.unlowered_bytes == 4096.0);  // 4 KiB, as `podsim explain run` prints
    CHECK(expected.steady_window == 100);
    CHECK(expected.eval.accumulated_tensors == 1);
    CHECK(config::overlap_name(config::Overlap::run_post_order) == "run_post_order");
    CHECK(config::parse_padding("bucket") == config::Padding::bucket);
}
