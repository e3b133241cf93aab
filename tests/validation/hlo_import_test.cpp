// Compiled XLA modules against XLA's own numbers and the measured H200 steps
// (tests/data/xla-truth: the modules, XLA's memory analysis, the step times of tools/xla_truth.py).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/load.hpp"
#include "core/gzip.hpp"
#include "hlo/lower.hpp"
#include "hlo/read_module.hpp"
#include "run/module_run.hpp"
#include "support.hpp"

using namespace podsim;
using podsim::test::source_path;

namespace {

const std::string kTruth = "tests/data/xla-truth/";

std::vector<nlohmann::json> records(const std::string& file) {
    std::vector<nlohmann::json> out;
    std::ifstream in(source_path(kTruth + file));
    for (std::string line; std::getline(in, line);)
        if (!line.empty()) out.push_back(nlohmann::json::parse(line));
    return out;
}

// The GPU calibration was fitted on the first 14 steps of gpu.jsonl; the steps appended to it
// later and those of gpu-families.jsonl (GPT-2, ViT, bigger Llama batches, host offload) were
// measured after the fit.
constexpr std::size_t kFittedSteps = 14;

std::vector<nlohmann::json> fitted_steps() {
    std::vector<nlohmann::json> out = records("gpu.jsonl");
    out.resize(std::min(out.size(), kFittedSteps));
    return out;
}

std::vector<nlohmann::json> later_steps() {
    std::vector<nlohmann::json> out = records("gpu.jsonl");
    out.erase(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(std::min(out.size(), kFittedSteps)));
    for (auto& r : records("gpu-families.jsonl")) out.push_back(std::move(r));
    return out;
}

// Every single-device step, fitted ones first.
std::vector<nlohmann::json> single_device() {
    std::vector<nlohmann::json> out = fitted_steps();
    for (auto& r : later_steps()) out.push_back(std::move(r));
    return out;
}

std::string module_path(const std::string& name) {
    return source_path(kTruth + "hlo/" + name + ".hlo.txt.gz");
}

run::ModuleRun run_on(const std::string& path, const std::string& topology, const std::string& slice,
                      const std::string& calibration = "") {
    run::ModuleRunRequest request;
    request.path = path;
    request.topology = topology;
    request.slice = slice;
    request.calibration = calibration;
    return run::run_module(request);
}

double relative(double value, double truth) {
    return value / truth - 1.0;
}

// The lines of docs/hlo-import.md under `heading`, up to the next heading of its level or above.
std::vector<std::string> doc_section(const std::string& heading) {
    std::ifstream doc(source_path("docs/hlo-import.md"));
    const std::size_t level = heading.find(' ');
    std::vector<std::string> out;
    bool inside = false;
    for (std::string line; std::getline(doc, line);) {
        if (inside && line.rfind('#', 0) == 0 && line.find(' ') <= level) break;
        if (inside) out.push_back(line);
        if (line == heading) inside = true;
    }
    REQUIRE_MESSAGE(inside, "docs/hlo-import.md has no " << heading);
    return out;
}

// A Markdown table of the document: the row of each module shows the figures computed here, in
// order, each to the digits it shows (thousands separators allowed).
void check_doc_table(const std::vector<std::string>& lines,
                     const std::map<std::string, std::vector<double>>& rows) {
    const std::regex row(R"(^\| ([a-z0-9-]+)(?: \*)? \|(.*)\|$)"), number(R"([-+]?[\d,]*\d(\.\d+)?)");
    std::size_t shown = 0;
    for (const std::string& line : lines) {
        std::smatch m;
        if (!std::regex_search(line, m, row) || !rows.count(m[1])) continue;
        const std::string name = m[1], cells = m[2];
        CAPTURE(name);
        std::vector<std::pair<double, double>> figures;  // value, half a unit of its last digit
        for (std::sregex_iterator it(cells.begin(), cells.end(), number), end; it != end; ++it) {
            std::string text = (*it)[0];
            text.erase(std::remove(text.begin(), text.end(), ','), text.end());
            const auto dot = text.find('.');
            const int decimals = dot == std::string::npos ? 0 : static_cast<int>(text.size() - dot - 1);
            figures.emplace_back(std::stod(text), 0.5 * std::pow(10.0, -decimals) + 1e-9);
        }
        const std::vector<double>& want = rows.at(name);
        REQUIRE(figures.size() == want.size());
        for (std::size_t k = 0; k < want.size(); ++k) {
            CAPTURE(k);
            CHECK(std::fabs(figures[k].first - want[k]) <= figures[k].second);
        }
        ++shown;
    }
    CHECK(shown == rows.size());
}

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

}  // namespace

TEST_CASE("hlo import: every fixture module simulates, text and proto") {
    for (const auto& r : single_device()) {
        const run::ModuleRun m = run_on(module_path(r["name"]), "nvidia-h200", "1");
        CAPTURE(r["name"].get<std::string>());
        CHECK(m.simulation.report.step_time_s > 0.0);
        CHECK(m.simulation.report.hardware_flops_per_step > 0.0);
    }
    for (const auto& r : records("spmd.jsonl")) {
        const run::ModuleRun m = run_on(module_path(r["name"]), "tpu-v4", "2x2x4");
        CAPTURE(r["name"].get<std::string>());
        CHECK(m.lowered.devices == 16);
        CHECK(m.simulation.report.exposed_communication_s + m.simulation.report.overlapped_communication_s >
              0.0);
    }
    const std::string dump = kTruth + "dump-1b-b8-minimal-flash/after_optimizations.hlo.";
    const run::ModuleRun text = run_on(source_path(dump + "txt.gz"), "nvidia-h200", "1");
    const run::ModuleRun proto = run_on(source_path(dump + "pb.gz"), "nvidia-h200", "1");
    // The same program from either file: the same ops, FLOPs and step.
    CHECK(proto.format == "proto");
    CHECK(proto.simulation.program.ops.size() == text.simulation.program.ops.size());
    CHECK(proto.simulation.report.hardware_flops_per_step == text.simulation.report.hardware_flops_per_step);
    CHECK(proto.simulation.report.step_time_s ==
          doctest::Approx(text.simulation.report.step_time_s).epsilon(1e-9));
    // The public samples: a Llama-3.1-70B step over 128 GPUs with Transformer Engine attention, and a
    // Llama-3-8B step with ring attention over 4 (collective-permutes, conditionals), placed here on
    // TPU v4 slices of their device counts.
    const run::ModuleRun big =
        run_on(source_path("tests/data/xla__hlo_llama31_70b_bf16_16x8.hlo"), "tpu-v4", "4x4x8");
    CHECK(big.lowered.devices == 128);
    CHECK(big.lowered.collective_counts.at("all-reduce") > 0);
    const run::ModuleRun cp =
        run_on(source_path("tests/data/xla__hlo_llama3_8b_cp_bf16_1x4.hlo"), "tpu-v4", "2x2x1");
    CHECK(cp.lowered.devices == 4);
    CHECK(cp.lowered.collective_counts.at("collective-permute") > 0);
}

TEST_CASE("hlo import: memory against XLA's peak") {
    // With the HloProto's buffer assignment: XLA's peak_memory_in_bytes, within 0.1%.
    nlohmann::json flash;
    for (const auto& r : records("gpu.jsonl"))
        if (r["name"] == "1b-b8-minimal-flash") flash = r;
    REQUIRE(!flash.is_null());
    const run::ModuleRun proto = run_on(
        source_path(kTruth + "dump-1b-b8-minimal-flash/after_optimizations.hlo.pb.gz"), "nvidia-h200", "1");
    const double xla_peak = flash["memory_analysis"]["peak_memory_in_bytes"].get<double>();
    std::cout << fmt::format("\nmemory from the buffer assignment: podsim {:.0f}, XLA {:.0f} bytes\n",
                             proto.simulation.report.memory.peak_bytes, xla_peak);
    CHECK(proto.memory_source == "buffer assignment");
    CHECK(std::fabs(relative(proto.simulation.report.memory.peak_bytes, xla_peak)) <= 0.001);

    // From the text alone: podsim's liveness of the module's buffers over the simulated schedule,
    // within 5% of XLA's peak on every single-device module (those that ran out of memory too).
    std::cout << "\nmemory: podsim's liveness against XLA's peak_memory_in_bytes\n";
    std::map<std::string, std::vector<double>> memory_rows;
    // And the steps made after the calibration's: other remat policies, lengths and batches
    // (gpu-more.jsonl), other MLP activations (gpu-act.jsonl), MaxText's dropping MoE layer
    // (gpu-moe.jsonl), grouped- and multi-query attention, big vocabularies and ViT-L/16
    // (gpu-shapes.jsonl; two of its configs did not compile and have no module), tied output layers,
    // ViT-L at batch 512 and batch scans of the 1B and tiny steps (gpu-tied.jsonl).
    std::vector<nlohmann::json> steps = single_device();
    for (const char* file :
         {"gpu-more.jsonl", "gpu-act.jsonl", "gpu-moe.jsonl", "gpu-shapes.jsonl", "gpu-tied.jsonl"})
        for (auto& r : records(file))
            if (r.contains("memory_analysis")) steps.push_back(std::move(r));
    REQUIRE(steps.size() == 106);
    for (const auto& r : steps) {
        const run::ModuleRun m = run_on(module_path(r["name"]), "nvidia-h200", "1");
        const double truth = r["memory_analysis"]["peak_memory_in_bytes"].get<double>();
        const double error = relative(m.simulation.report.memory.peak_bytes, truth);
        std::cout << fmt::format("  {:<28} {:>16.0f} {:>16.0f} {:+.4f}%\n", r["name"].get<std::string>(),
                                 m.simulation.report.memory.peak_bytes, truth, 100.0 * error);
        memory_rows[r["name"]] = {truth, m.simulation.report.memory.peak_bytes, 100.0 * error};
        CAPTURE(r["name"].get<std::string>());
        CHECK(m.memory_source == "liveness");
        // Expected misses, kept visible (docs/hlo-import.md): ViT-B/16 at batch 1024 with full
        // remat, +7.6 %, the largest of the ViT steps with remat, which are all over; the tiny model
        // at 1024 tokens, +13.7 %, whose fp32 scores and their casts podsim holds together.
        if (r["name"] == "vit-b1024-full-dot" || r["name"] == "tiny-b2-minimal-dot-s1024")
            CHECK(error > 0.05);
        else
            CHECK(std::fabs(error) <= 0.05);
    }
    // docs/hlo-import.md shows these figures (XLA's peak, podsim's, the error).
    check_doc_table(doc_section("### Memory"), memory_rows);
}

TEST_CASE("hlo import: the module's FLOPs are the native lowering's") {
    // The dot-attention steps (einsum attention: every FLOP is a dot in the module) against podsim's
    // own lowering of the same config: executed FLOPs, every loop iteration counted, within 2%.
    int compared = 0;
    for (const auto& r : single_device()) {
        const std::string name = r["name"];
        const std::string config = kTruth + "podsim/run-" + name + ".yaml";
        if (r["attn"] != "dot" || !std::filesystem::exists(source_path(config))) continue;
        const run::Simulation native = test::simulate_config(config);
        const run::ModuleRun m = run_on(module_path(name), "nvidia-h200", "1");
        const double error =
            relative(m.simulation.report.hardware_flops_per_step, native.report.hardware_flops_per_step);
        std::cout << fmt::format("flops {:<28} module {:.6e} native {:.6e} {:+.4f}%\n", name,
                                 m.simulation.report.hardware_flops_per_step,
                                 native.report.hardware_flops_per_step, 100.0 * error);
        CAPTURE(name);
        CHECK(std::fabs(error) <= 0.02);
        ++compared;
    }
    CHECK(compared == 4);
}

namespace {

// Bytes of `f32[2048,8,128]`-like array shapes (no tuple).
double array_bytes(const std::string& type, const std::string& dims) {
    static const std::map<std::string, double> kBytes = {
        {"pred", 1}, {"s8", 1},  {"u8", 1},  {"s16", 2}, {"u16", 2}, {"f16", 2}, {"bf16", 2},
        {"s32", 4},  {"u32", 4}, {"f32", 4}, {"s64", 8}, {"u64", 8}, {"f64", 8}};
    double n = kBytes.at(type);
    std::stringstream s(dims);
    for (std::string d; std::getline(s, d, ',');)
        if (!d.empty()) n *= std::stod(d);
    return n;
}

// Devices per group of a replica_groups value, read off its text.
double group_size(const std::string& line) {
    std::smatch m;
    if (std::regex_search(line, m, std::regex(R"(replica_groups=\[(\d+),(\d+)\]<=)"))) return std::stod(m[2]);
    if (std::regex_search(line, m, std::regex(R"(replica_groups=mesh\[([^\]]*)\] \{([^}]*)\})"))) {
        std::map<std::string, double> sizes;
        const std::string mesh = m[1], grouped = m[2];
        const std::regex axis(R"('([^']+)'=(\d+))"), name(R"('([^']+)')");
        for (std::sregex_iterator it(mesh.begin(), mesh.end(), axis), end; it != end; ++it)
            sizes[(*it)[1]] = std::stod((*it)[2]);
        double n = 1;
        for (std::sregex_iterator it(grouped.begin(), grouped.end(), name), end; it != end; ++it)
            n *= sizes.at((*it)[1]);
        return n;
    }
    if (std::regex_search(line, m, std::regex(R"(replica_groups=\{\{([^}]*)\})"))) {
        const std::string first = m[1];
        return static_cast<double>(std::count(first.begin(), first.end(), ',') + 1);
    }
    return 1;
}

// The collective bytes of a module counted straight off its text: for every collective line, the
// full array as the scaling book counts it (an all-gather's result, a reduce-scatter's operand: its
// result times the group, an all-reduce's or all-to-all's or permute's result), times how often the
// line's computation runs (a while body: its known_trip_count, times its caller's).
std::map<std::string, double> direct_collective_bytes(const std::string& text) {
    std::map<std::string, std::vector<std::pair<std::string, double>>> lines;  // computation -> (kind, bytes)
    std::map<std::string, std::pair<std::string, double>> body_of;             // body -> (caller, trips)
    std::string computation, entry;
    const std::regex header(R"(^(ENTRY )?%([^ ]+) )");
    // The result shape (an array, or the tuple of a combined collective) and the opcode.
    const std::regex collective(
        R"(= (\(.*\)|[a-z0-9]+\[[0-9,]*\]\S*) (all-gather|reduce-scatter|all-reduce|all-to-all|collective-permute)\()");
    const std::regex array(R"(([a-z][a-z0-9]*)\[([0-9,]*)\])");
    const std::regex loop_condition_first(
        R"(while\(.*condition=%([^,]+), body=%([^,]+),.*"known_trip_count":\{"n":"(\d+)\"\})");
    std::stringstream in(text);
    for (std::string line; std::getline(in, line);) {
        std::smatch m;
        if (!line.empty() && line[0] != ' ' && line.back() == '{' && std::regex_search(line, m, header)) {
            computation = m[2];
            if (m[1].matched) entry = computation;
            continue;
        }
        if (line.find("while(") != std::string::npos && std::regex_search(line, m, loop_condition_first)) {
            body_of[m[2]] = {computation, std::stod(m[3])};
            continue;
        }
        if (line.find("all-") == std::string::npos && line.find("reduce-scatter") == std::string::npos &&
            line.find("collective-permute") == std::string::npos)
            continue;
        if (!std::regex_search(line, m, collective)) continue;
        const std::string kind = m[2], shape = m[1];
        double bytes = 0.0;
        for (std::sregex_iterator it(shape.begin(), shape.end(), array), end; it != end; ++it)
            bytes += array_bytes((*it)[1], (*it)[2]);
        if (kind == "reduce-scatter") bytes *= group_size(line);
        lines[computation].emplace_back(kind, bytes);
    }
    auto runs = [&](auto&& self, const std::string& c) -> double {
        if (c == entry) return 1.0;
        auto it = body_of.find(c);
        return it == body_of.end() ? 0.0 : it->second.second * self(self, it->second.first);
    };
    std::map<std::string, double> out;
    for (const auto& [c, items] : lines)
        for (const auto& [kind, bytes] : items) out[kind] += bytes * runs(runs, c);
    return out;
}

}  // namespace

TEST_CASE("hlo import: collective bytes per step are the module's") {
    for (const auto& r : records("spmd.jsonl")) {
        const std::string name = r["name"];
        CAPTURE(name);
        const core::FileBytes text = core::read_maybe_gzipped(module_path(name), std::uint64_t{1} << 30);
        REQUIRE(text.error.empty());
        const auto direct = direct_collective_bytes(text.bytes);
        const run::ModuleRun m = run_on(module_path(name), "tpu-v4", "2x2x4");
        REQUIRE(!direct.empty());
        CHECK(m.lowered.collective_bytes.size() == direct.size());
        for (const auto& entry : direct) {
            const std::string& kind = entry.first;  // a plain reference: CAPTURE cannot take a binding
            const double bytes = entry.second;
            CAPTURE(kind);
            REQUIRE(m.lowered.collective_bytes.count(kind));
            std::cout << fmt::format("collectives {:<26} {:<18} podsim {:.6e} direct {:.6e}\n", name, kind,
                                     m.lowered.collective_bytes.at(kind), bytes);
            CHECK(m.lowered.collective_bytes.at(kind) == doctest::Approx(bytes).epsilon(1e-12));
        }
    }
}

namespace {

// A measured single-device step, lowered once, simulated at any calibration.
struct Measured {
    std::string name;
    double step_s = 0.0;
    run::ProgramSpec spec;
    parallel::DeviceProgram program;
};

// What tools/xla_truth.py times: each step from the call to loss.block_until_ready(), so the host's
// dispatch of the step (calibration host_overhead_jax) is not hidden behind the device as it is in a
// training loop that keeps dispatching ahead.
double harness_step(const Measured& m, const cost::Calibration& calibration) {
    run::ProgramSpec spec = m.spec;
    spec.calibration = calibration;
    run::SimulationCache cache;
    const run::Simulation sim = run::simulate(m.program, spec, cache);
    return sim.report.step_time_s + calibration.host_overhead_jax;
}

struct Fit {
    double mxu_efficiency = 0.0;
    double hbm_efficiency = 0.0;
};

cost::Calibration with(const cost::Calibration& base, const Fit& f) {
    cost::Calibration c = base;
    c.mxu_efficiency = f.mxu_efficiency;
    c.hbm_efficiency = f.hbm_efficiency;
    return c;
}

// Least squares in log error over the two GPU parameters: Gauss-Newton with a Levenberg damping
// term, the Jacobian by finite differences, the parameters kept in [0.3, 1].
Fit fit(const std::vector<const Measured*>& cases, const cost::Calibration& base) {
    auto residuals = [&](const Fit& f) {
        std::vector<double> r;
        for (const Measured* m : cases) r.push_back(std::log(harness_step(*m, with(base, f)) / m->step_s));
        return r;
    };
    auto squared = [](const std::vector<double>& r) {
        double s = 0.0;
        for (double x : r) s += x * x;
        return s;
    };
    auto clamp = [](Fit f) {
        f.mxu_efficiency = std::clamp(f.mxu_efficiency, 0.3, 1.0);
        f.hbm_efficiency = std::clamp(f.hbm_efficiency, 0.3, 1.0);
        return f;
    };
    Fit f{0.7, 0.7};
    std::vector<double> r = residuals(f);
    double damping = 1e-3;
    const double h = 1e-4;
    for (int iteration = 0; iteration < 30; ++iteration) {
        Fit fm = f, fh = f;
        fm.mxu_efficiency += h;
        fh.hbm_efficiency += h;
        const std::vector<double> rm = residuals(fm), rh = residuals(fh);
        double a = 0, b = 0, c = 0, gm = 0, gh = 0;  // J^T J = [a b; b c], J^T r = [gm gh]
        for (std::size_t i = 0; i < r.size(); ++i) {
            const double jm = (rm[i] - r[i]) / h, jh = (rh[i] - r[i]) / h;
            a += jm * jm, b += jm * jh, c += jh * jh, gm += jm * r[i], gh += jh * r[i];
        }
        const double am = a * (1 + damping), cm = c * (1 + damping), det = am * cm - b * b;
        if (det <= 0.0) break;
        const Fit step =
            clamp({f.mxu_efficiency - (cm * gm - b * gh) / det, f.hbm_efficiency - (am * gh - b * gm) / det});
        const std::vector<double> rs = residuals(step);
        if (squared(rs) < squared(r)) {
            const double moved = std::fabs(step.mxu_efficiency - f.mxu_efficiency) +
                                 std::fabs(step.hbm_efficiency - f.hbm_efficiency);
            f = step, r = rs, damping /= 10.0;
            if (moved < 1e-5) break;
        } else {
            damping *= 10.0;
            if (damping > 1e6) break;
        }
    }
    return f;
}

}  // namespace

TEST_CASE("hlo import: step time on nvidia-h200 against the measured steps, left out one at a time") {
    // The GPU's two fitted parameters: mxu_efficiency (the fraction of the dense BF16 peak a matmul
    // kernel reaches) and hbm_efficiency (of HBM bandwidth, for memory-bound kernels); every other
    // constant keeps its documented default (cost/calibration.cpp): op_overhead 2 us per kernel,
    // host_overhead_jax 0.2 ms. Each step that ran is predicted by a fit over the others.
    std::vector<Measured> cases;
    for (const auto& r : fitted_steps()) {
        if (r["status"] != "ran") continue;
        run::ModuleRun m = run_on(module_path(r["name"]), "nvidia-h200", "1");
        cases.push_back({r["name"], r["step_s_median"].get<double>(), m.spec, m.simulation.program});
    }
    REQUIRE(cases.size() == 12);
    const cost::Calibration base = cost::Calibration::defaults();
    std::vector<const Measured*> all;
    for (const auto& c : cases) all.push_back(&c);
    const Fit everything = fit(all, base);

    std::cout << fmt::format(
        "\nstep time on nvidia-h200 (fit over all: mxu_efficiency {:.3f}, hbm_efficiency {:.3f})\n",
        everything.mxu_efficiency, everything.hbm_efficiency);
    std::cout << fmt::format("  {:<28} {:>11} {:>11} {:>8} {:>11} {:>8}  left-out fit\n", "module",
                             "measured", "fitted", "error", "left out", "error");
    std::vector<double> left_out;
    std::map<std::string, std::vector<double>> rows;  // module -> the figures docs/hlo-import.md shows
    for (const auto& c : cases) {
        std::vector<const Measured*> others;
        for (const auto& o : cases)
            if (&o != &c) others.push_back(&o);
        const Fit without = fit(others, base);
        const double in = harness_step(c, with(base, everything));
        const double out = harness_step(c, with(base, without));
        left_out.push_back(std::fabs(relative(out, c.step_s)));
        std::cout << fmt::format(
            "  {:<28} {:>9.3f}ms {:>9.3f}ms {:>+7.1f}% {:>9.3f}ms {:>+7.1f}%  {:.3f} {:.3f}\n", c.name,
            1e3 * c.step_s, 1e3 * in, 100.0 * relative(in, c.step_s), 1e3 * out,
            100.0 * relative(out, c.step_s), without.mxu_efficiency, without.hbm_efficiency);
        rows[c.name] = {1e3 * c.step_s,
                        1e3 * in,
                        100.0 * relative(in, c.step_s),
                        1e3 * out,
                        100.0 * relative(out, c.step_s),
                        without.mxu_efficiency,
                        without.hbm_efficiency};
    }
    const double med = median(left_out), worst = *std::max_element(left_out.begin(), left_out.end());
    std::cout << fmt::format("  left out one at a time: median {:.1f}%, worst {:.1f}%\n", 100.0 * med,
                             100.0 * worst);
    CHECK(med <= 0.10);
    CHECK(worst <= 0.20);

    // The calibration nvidia-h200 ships (topologies/calibration/nvidia-h200.yaml) is this fit.
    const cost::Calibration shipped =
        config::load_calibration_file(source_path("topologies/calibration/nvidia-h200.yaml"));
    CHECK(shipped.mxu_efficiency == doctest::Approx(everything.mxu_efficiency).epsilon(0.005).scale(0.0));
    CHECK(shipped.hbm_efficiency == doctest::Approx(everything.hbm_efficiency).epsilon(0.005).scale(0.0));

    // docs/hlo-import.md shows this table: each figure as computed here, to the digits it shows.
    const std::vector<std::string> section = doc_section("## Calibration on GPUs");
    check_doc_table(section, rows);
    bool summary = false;
    for (const std::string& line : section) {
        std::smatch m;
        if (!std::regex_search(line, m,
                               std::regex(R"(^Left out one at a time: median ([\d.]+)%, worst ([\d.]+)%)")))
            continue;
        CHECK(std::fabs(std::stod(m[1]) - 100.0 * med) <= 0.05 + 1e-9);  // shown to 0.1%
        CHECK(std::fabs(std::stod(m[2]) - 100.0 * worst) <= 0.05 + 1e-9);
        summary = true;
    }
    CHECK(summary);

    // The steps measured after the fit: each predicted by the calibration as shipped (fitted without
    // them), and by a fit over every other step that ran, these included.
    // Expected misses, outside the fits: with qkv_proj_offloaded the step measured 306 ms, 47% over
    // the same step without offload (1b-b8-minimal-flash, 194 ms), while podsim's host copies
    // (memory space 5, over the host link beside the compute) add almost nothing; what XLA:GPU
    // waits on there is not modelled yet. Every offloading step is one (their names say so).
    std::vector<Measured> later, missed;
    for (const auto& r : later_steps()) {
        if (r["status"] != "ran") continue;
        run::ModuleRun m = run_on(module_path(r["name"]), "nvidia-h200", "1");
        Measured measured{r["name"], r["step_s_median"].get<double>(), m.spec, m.simulation.program};
        if (measured.name.find("offload") != std::string::npos)
            missed.push_back(std::move(measured));
        else
            later.push_back(std::move(measured));
    }
    REQUIRE(later.size() == 20);
    REQUIRE(missed.size() == 3);
    std::vector<const Measured*> every = all;
    for (const auto& c : later) every.push_back(&c);
    std::cout << fmt::format(
        "\nsteps measured after the fit\n  {:<28} {:>11} {:>11} {:>8} {:>11} {:>8}  left-out fit\n", "module",
        "measured", "shipped", "error", "left out", "error");
    std::vector<double> held_out, left_out_of_all;
    for (const Measured* c : every) {
        std::vector<const Measured*> others;
        for (const Measured* o : every)
            if (o != c) others.push_back(o);
        const Fit without = fit(others, base);
        const double out = harness_step(*c, with(base, without));
        left_out_of_all.push_back(std::fabs(relative(out, c->step_s)));
        if (std::find(all.begin(), all.end(), c) != all.end()) continue;
        const double predicted = harness_step(*c, with(base, everything));
        held_out.push_back(std::fabs(relative(predicted, c->step_s)));
        std::cout << fmt::format(
            "  {:<28} {:>9.3f}ms {:>9.3f}ms {:>+7.1f}% {:>9.3f}ms {:>+7.1f}%  {:.3f} {:.3f}\n", c->name,
            1e3 * c->step_s, 1e3 * predicted, 100.0 * relative(predicted, c->step_s), 1e3 * out,
            100.0 * relative(out, c->step_s), without.mxu_efficiency, without.hbm_efficiency);
    }
    for (const Measured& m : missed) {
        const double predicted = harness_step(m, with(base, everything)),
                     miss = relative(predicted, m.step_s);
        std::cout << fmt::format("  {:<28} {:>9.3f}ms {:>9.3f}ms {:>+7.1f}%  (expected miss: host offload)\n",
                                 m.name, 1e3 * m.step_s, 1e3 * predicted, 100.0 * miss);
        CAPTURE(m.name);
        CHECK(miss < -0.2);  // still a miss; when it is not, it joins the others
    }
    const Fit over_all = fit(every, base);
    std::cout << fmt::format("  shipped fit on them: median {:.1f}%, worst {:.1f}%\n",
                             100.0 * median(held_out),
                             100.0 * *std::max_element(held_out.begin(), held_out.end()));
    std::cout << fmt::format(
        "  all {} steps, left out one at a time: median {:.1f}%, worst {:.1f}% (fit over all: {:.3f} "
        "{:.3f})\n",
        every.size(), 100.0 * median(left_out_of_all),
        100.0 * *std::max_element(left_out_of_all.begin(), left_out_of_all.end()), over_all.mxu_efficiency,
        over_all.hbm_efficiency);
    CHECK(median(held_out) <= 0.10);
    CHECK(*std::max_element(held_out.begin(), held_out.end()) <= 0.20);
    CHECK(median(left_out_of_all) <= 0.10);
    CHECK(*std::max_element(left_out_of_all.begin(), left_out_of_all.end()) <= 0.20);
}
