#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "config/sweep_file.hpp"
#include "report/format.hpp"
#include "run/fold.hpp"
#include "support.hpp"

// The fast paths (collectives that run alone replayed from one run, shared caches) against the full
// simulation (run::SimulateOptions::exact, `--exact`): every number of the report must agree within
// 1e-9 relative. They are expected to agree exactly; link byte counters are sums of the same terms
// in another order, so they may differ in the last bits (see docs/model.md, "Simulating fast").

using namespace podsim;

namespace {

constexpr double kRelative = 1e-9;

// Points of the GPT-3 175B sweep checked in both modes. Under the sanitizers (ten times slower)
// fewer, so that `make sanitize` stays within CI's time.
#ifdef PODSIM_SANITIZED_BUILD
constexpr int kSweepPoints = 10;
#else
constexpr int kSweepPoints = 300;
#endif

// Paths of the numbers where a and b differ by more than kRelative, or of any other difference.
void differences(const nlohmann::json& a, const nlohmann::json& b, const std::string& path,
                 std::vector<std::string>& out) {
    if (a.is_number() && b.is_number()) {
        const double x = a.get<double>(), y = b.get<double>();
        if (std::abs(x - y) > kRelative * std::max(std::abs(x), std::abs(y)))
            out.push_back(fmt::format("{}: {} vs {}", path, x, y));
        return;
    }
    if (a.type() != b.type() || a.size() != b.size()) {
        out.push_back(path + ": " + a.dump().substr(0, 80) + " vs " + b.dump().substr(0, 80));
        return;
    }
    if (a.is_object()) {
        for (auto it = a.begin(); it != a.end(); ++it) {
            if (!b.contains(it.key())) {
                out.push_back(path + "." + it.key() + " missing");
                continue;
            }
            differences(it.value(), b.at(it.key()), path + "." + it.key(), out);
        }
    } else if (a.is_array()) {
        for (std::size_t i = 0; i < a.size(); ++i)
            differences(a[i], b[i], fmt::format("{}[{}]", path, i), out);
    } else if (a != b) {
        out.push_back(path + ": " + a.dump() + " vs " + b.dump());
    }
}

// Simulates `spec` fast (with a cache shared across calls) and exactly; returns what differs.
// With `uncounted`, also fast without counting link bytes (as `podsim run` does), which must change
// nothing else.
// Also folded (SimulateOptions::fold), which must give the same report; counts in `folds` whether
// it folded, and in `microbatch_folds` whether it folded microbatches too.
std::vector<std::string> compare_modes(const run::RunSpec& spec, run::SimulationCache& cache,
                                       bool uncounted = false, int* folds = nullptr,
                                       int* microbatch_folds = nullptr) {
    run::Simulation fast = run::simulate(spec, cache, run::SimulateOptions{.link_bytes = true});
    std::vector<std::string> out;
    run::Simulation folded = run::simulate(spec, cache, run::SimulateOptions{.fold = true});
    if (folds && folded.folded_layers > 0) ++*folds;
    if (microbatch_folds && folded.folded_microbatches > 0) ++*microbatch_folds;
    if (uncounted) {
        run::Simulation plain = run::simulate(spec, cache);
        if (!plain.timeline.link_bytes.empty()) out.push_back("link bytes counted although not asked for");
        if (plain.timeline.step_time != fast.timeline.step_time)
            out.push_back(fmt::format("counting link bytes moved the step time: {} ps vs {} ps",
                                      plain.timeline.step_time, fast.timeline.step_time));
        if (report::format_json(plain.report) != report::format_json(fast.report))
            out.push_back("counting link bytes changed the report");
    }
    run::SimulationCache fresh;
    run::Simulation exact =
        run::simulate(spec, fresh, run::SimulateOptions{.exact = true, .link_bytes = true});
    if (fast.timeline.step_time != exact.timeline.step_time)
        out.push_back(
            fmt::format("step time {} ps vs {} ps", fast.timeline.step_time, exact.timeline.step_time));
    if (fast.memory.peak_bytes != exact.memory.peak_bytes)
        out.push_back(fmt::format("peak {} vs {} bytes", fast.memory.peak_bytes, exact.memory.peak_bytes));
    for (std::size_t i = 0; i < fast.timeline.spans.size(); ++i) {
        const auto &f = fast.timeline.spans[i], &e = exact.timeline.spans[i];
        if (f.start != e.start || f.end != e.end) {
            out.push_back(fmt::format("op {} ({}) ran {}..{} ps vs {}..{} ps", i, fast.program.ops[i].name,
                                      f.start, f.end, e.start, e.end));
            break;
        }
    }
    REQUIRE(fast.timeline.link_bytes.size() == exact.timeline.link_bytes.size());
    for (std::size_t l = 0; l < fast.timeline.link_bytes.size(); ++l) {
        const double x = fast.timeline.link_bytes[l], y = exact.timeline.link_bytes[l];
        if (std::abs(x - y) > kRelative * std::max(std::abs(x), std::abs(y))) {
            out.push_back(fmt::format("link {} carried {} vs {} bytes", l, x, y));
            break;
        }
    }
    const std::string exact_report = report::format_json(exact.report);
    differences(nlohmann::json::parse(report::format_json(fast.report)), nlohmann::json::parse(exact_report),
                "report", out);
    differences(nlohmann::json::parse(report::format_json(folded.report)),
                nlohmann::json::parse(exact_report), "folded report", out);
    return out;
}

}  // namespace

TEST_CASE("fast and exact simulation agree on every shipped config") {
    namespace fs = std::filesystem;
    run::SimulationCache cache;
    int checked = 0, folds = 0;
    for (const char* folder : {"configs", "tests/validation", "tests/validation/xla"}) {
        std::vector<fs::path> files;
        for (const auto& e : fs::directory_iterator(test::source_path(folder)))
            if (e.path().extension() == ".yaml") files.push_back(e.path());
        std::sort(files.begin(), files.end());
        for (const auto& file : files) {
            CAPTURE(file.string());
            run::RunSpec spec;
            try {
                spec = config::load_run_file(file.string());
            } catch (const core::UserError&) {
                continue;  // a validation case without a run (a collective or a whole run)
            }
            auto diff = compare_modes(spec, cache, true, &folds);
            CHECK_MESSAGE(diff.empty(), fmt::format("{}", fmt::join(diff, "\n")));
            ++checked;
        }
    }
    CHECK(checked >= 30);
    MESSAGE(fmt::format("{} of {} shipped configs folded", folds, checked));
    CHECK(folds >= checked / 2);
}

TEST_CASE("fast and exact simulation agree on random points of the GPT-3 175B sweep") {
    auto plan = config::SweepPlan::load(test::source_path("configs/sweeps/gpt3-175b-v4.yaml"));
    REQUIRE(plan.size() == 5760);  // 6 slices x 8 meshes x 5 batches x 3 remat x 4 microbatches x 2
    std::mt19937_64 random(12);
    std::uniform_int_distribution<std::size_t> pick(0, plan.size() - 1);
    run::SimulationCache cache;
    int simulated = 0, draws = 0, folds = 0, microbatch_folds = 0, many_microbatches = 0;
    while (simulated < kSweepPoints) {
        REQUIRE(++draws < 20 * kSweepPoints);
        const std::size_t index = pick(random);
        auto instance = plan.make(index);
        if (!instance.ok) continue;  // does not shard
        CAPTURE(index);
        auto diff = compare_modes(instance.spec, cache, false, &folds, &microbatch_folds);
        CHECK_MESSAGE(diff.empty(), fmt::format("{}", fmt::join(diff, "\n")));
        ++simulated;
        if (instance.spec.training.microbatches > 4) ++many_microbatches;
    }
    // Nearly every point of this sweep folds (the rest are simulated whole, and agree as well), and
    // most of those with 8 microbatches fold them to 4.
    MESSAGE(fmt::format("{} of {} sweep points folded; {} of the {} with 8 microbatches folded them", folds,
                        simulated, microbatch_folds, many_microbatches));
    CHECK(folds >= simulated * 9 / 10);
    CHECK(microbatch_folds >= many_microbatches / 2);
}

TEST_CASE("a flow network's transfer slots are labels: a state whose slots swap every layer repeats") {
    // Point 147 of the 175B sweep at 16 layers: fsdp 64 x tensor 2 on 4x4x8. The tensor all-reduces
    // and the FSDP all-gathers share a flow network whose two transfer slots swap from one layer to
    // the next. Which slot a transfer holds changes no time, so the network's snapshot names
    // transfers by their ops, and the state at a layer boundary repeats the one a layer before (with
    // slots in the snapshot it repeated only two layers before).
    auto plan = config::SweepPlan::load(test::source_path("configs/sweeps/gpt3-175b-v4.yaml"));
    auto instance = plan.make(147);
    REQUIRE(instance.ok);
    REQUIRE(instance.spec.mesh.ici_size_of("tensor") == 2);
    instance.spec.model.layers = 16;
    run::SimulationCache cache;
    run::Simulation fast = run::simulate(instance.spec, cache);
    const auto& ops = fast.program.ops;
    auto first_named = [&](std::string_view name) {
        auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.name == name; });
        REQUIRE(it != ops.end());
        return static_cast<std::size_t>(it - ops.begin());
    };
    const std::size_t layer_ops = first_named("layer7.norm1") - first_named("layer6.norm1");
    bool one_layer_jump = false;
    for (const auto& jump : fast.timeline.jumps)
        one_layer_jump = one_layer_jump || (ops[jump.first_op].phase == workload::Phase::forward &&
                                            jump.length == layer_ops && jump.periods >= 1);
    CHECK(one_layer_jump);
    auto diff = compare_modes(instance.spec, cache);
    CHECK_MESSAGE(diff.empty(), fmt::format("{}", fmt::join(diff, "\n")));
}

TEST_CASE("a model is folded to 8 layers with synchronous collectives, 10 without (one more when odd)") {
    // The default config, GPT-2 2B with PyTorch/XLA's synchronous collectives: 18 layers, folded to 8
    // with 10 layers spliced into each run.
    auto spec = test::load_config("configs/default.yaml");
    REQUIRE(spec.model.layers == 18);
    REQUIRE(!spec.runtime.async());
    run::SimulationCache cache;
    const run::SimulateOptions fold{.fold = true};
    auto folded = run::simulate(spec, cache, fold);
    CHECK(folded.folded_layers == 8);
    CHECK(folded.program.ops.size() < static_cast<std::size_t>(folded.report.ops));
    auto whole = run::simulate(spec, cache);
    CHECK(whole.folded_layers == 0);
    CHECK(report::format_json(folded.report) == report::format_json(whole.report));
    spec.model.layers = 19;  // a period may be two layers: the cut keeps the parity
    CHECK(run::simulate(spec, cache, fold).folded_layers == 9);
    spec.model.layers = 10;  // the fewest that fold, 2 layers spliced in
    CHECK(run::simulate(spec, cache, fold).folded_layers == 8);
    spec.model.layers = 9;  // cut to 9: nothing to splice in, simulated whole
    CHECK(run::simulate(spec, cache, fold).folded_layers == 0);
    // Asynchronous collectives prefetch the next groups' weights: the cut keeps 10 layers (11 when
    // odd), and GPT-2 small's 12 are the fewest that fold.
    spec.runtime.async_collectives = true;
    spec.model.layers = 18;
    auto folded_async = run::simulate(spec, cache, fold);
    CHECK(folded_async.folded_layers == 10);
    CHECK(report::format_json(folded_async.report) == report::format_json(run::simulate(spec, cache).report));
    spec.model.layers = 12;
    CHECK(run::simulate(spec, cache, fold).folded_layers == 10);
    spec.model.layers = 11;
    CHECK(run::simulate(spec, cache, fold).folded_layers == 0);
    spec.runtime.async_collectives = std::nullopt;
    spec.model.layers = 18;
    CHECK(run::simulate(spec, cache, run::SimulateOptions{.exact = true, .fold = true}).folded_layers == 0);
    // Offloading remat policies are not folded: with synchronous collectives their spliced report
    // differed from the whole simulation (found by differential fuzzing).
    auto offloaded = test::load_config("configs/gpt3-175b-fsdp-v4-1024.yaml");
    offloaded.training.remat = workload::Remat::minimal_offloaded;
    offloaded.runtime.async_collectives = false;
    auto offloaded_folded = run::simulate(offloaded, cache, fold);
    CHECK(offloaded_folded.folded_layers == 0);
    CHECK(report::format_json(offloaded_folded.report) ==
          report::format_json(run::simulate(offloaded, cache, run::SimulateOptions{.exact = true}).report));
    // A graph compiled every step pays for every op of the whole program on the host: not folded.
    spec.runtime.recompile_every_step = true;
    CHECK(run::simulate(spec, cache, fold).folded_layers == 0);
}

TEST_CASE("eight microbatches are folded to four when one microbatch's state repeats the one before") {
    // The slow config of `make bench`: GPT-3 175B on 16x16x16, data 8 x fsdp 64 x tensor 8, 8
    // microbatches of 512 sequences. Simulated as 10 layers and 4 microbatches of the same size
    // (2,048 sequences, not 4,096 in 4 of 1,024), with microbatch 1's period spliced in 4 more times:
    // the same report.
    auto spec = test::load_config("bench/configs/gpt3-175b-16x16x16-mb8.yaml");
    REQUIRE(spec.training.microbatches == 8);
    run::SimulationCache cache;
    auto folded = run::simulate(spec, cache, run::SimulateOptions{.fold = true});
    CHECK(folded.folded_layers == 10);
    CHECK(folded.folded_microbatches == 4);
    CHECK(folded.program.microbatches == 4);
    auto exact = run::simulate(spec, cache, run::SimulateOptions{.exact = true});
    CHECK(exact.program.microbatches == 8);
    CHECK(folded.report.ops == static_cast<long>(exact.program.ops.size()));
    std::vector<std::string> out;
    differences(nlohmann::json::parse(report::format_json(folded.report)),
                nlohmann::json::parse(report::format_json(exact.report)), "folded report", out);
    CHECK_MESSAGE(out.empty(), fmt::format("{}", fmt::join(out, "\n")));
    // Five microbatches fold to four too (one copy); four or fewer are simulated as they are, and so
    // is a batch that the microbatches do not divide evenly into a whole cut batch.
    CHECK(run::cut_microbatches(5, 40) == 4);
    CHECK(run::cut_microbatches(4, 256) == 0);
    CHECK(run::cut_microbatches(6, 100) == 0);
    spec.training.microbatches = 4;
    CHECK(run::simulate(spec, cache, run::SimulateOptions{.fold = true}).folded_microbatches == 0);
}

TEST_CASE("equal memory peaks in fractions of bytes: the folded peak agrees in bytes, not in which one") {
    // Found by differential fuzzing (docs/model.md, "Where exact agreement stops"). PaLM 540B on 2 x
    // 3,072 chips with save_dot_except_mlp and 6 microbatches: per-chip bytes have fractions, every
    // microbatch reaches the same peak, and rounding decides which comes first. Folded layers round
    // the drift once per splice, the whole step once per layer, so the two pick different
    // microbatches: the peak's bytes agree to 1e-12, its time and breakdown are another peak's.
    auto spec = test::load_config("configs/palm-540b-2x3072.yaml");
    spec.training.microbatches = 6;
    spec.training.global_batch = 3072;
    spec.training.remat = workload::Remat::save_dot_except_mlp;
    spec.runtime.prefetch_depth = 0;
    run::SimulationCache cache;
    auto folded = run::simulate(spec, cache, run::SimulateOptions{.fold = true});
    REQUIRE(folded.folded_layers > 0);
    CHECK(folded.folded_microbatches == 0);  // fractions of bytes: microbatches are not folded
    auto exact = run::simulate(spec, cache, run::SimulateOptions{.exact = true});
    CHECK(folded.report.step_time_s == exact.report.step_time_s);
    CHECK(folded.report.mfu == exact.report.mfu);
    const double a = folded.report.memory.peak_bytes, b = exact.report.memory.peak_bytes;
    CHECK(std::abs(a - b) <= 1e-12 * b);
    CHECK(folded.report.memory.fits == exact.report.memory.fits);
    // The bound holds as long as the peaks are this close: the breakdown's activations too.
    CHECK(std::abs(folded.report.memory.activations_bytes - exact.report.memory.activations_bytes) <=
          1e-12 * exact.report.memory.activations_bytes);
}

TEST_CASE("a peak that comes back in every microbatch is reported at its first, folded or not") {
    // Found by differential fuzzing of folded against exact runs: tensor 6 leaves each chip thirds of
    // a byte, the two modes add them in another order, and the four microbatches' equal peaks came
    // out different in their last bits: folded reported the first (10.2 ms), exact the last (87.7 ms).
    auto spec = test::run_from_text(R"(schema: podsim.run/v1
model: gpt2-20b
topology: tpu-v5p
slice: 4x8x12
mesh: {tensor: 6, fsdp: 8, data: 8}
training: {global_batch: 512, microbatches: 4, seq_len: 128}
)");
    spec.model.layers = 12;
    spec.model.kv_heads = 1;
    run::SimulationCache cache;
    const auto diff = compare_modes(spec, cache);
    CHECK_MESSAGE(diff.empty(), fmt::format("{}", fmt::join(diff, "\n")));
    const run::Simulation folded = run::simulate(spec, cache, run::SimulateOptions{.fold = true});
    CHECK(folded.folded_layers > 0);
    CHECK(folded.report.memory.peak_time_s < folded.report.step_time_s / 4);  // the first microbatch
}
