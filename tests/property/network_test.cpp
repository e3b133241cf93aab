#include <doctest/doctest.h>

#include <map>

#include "collectives/closed_form.hpp"
#include "config/load.hpp"
#include "core/engine.hpp"
#include "network/flow_network.hpp"
#include "run/collective_run.hpp"
#include "scheduler/transfer_alone.hpp"
#include "support.hpp"

// The link-level network model against the scaling book's closed forms, and its physical
// properties: monotonic, wraparound beats a line, symmetric, contention only on shared links.

using namespace podsim;
using collectives::CollectiveKind;

namespace {

run::CollectiveRequest request(const std::string& topology, const std::string& slice, const std::string& mesh,
                               const std::string& axis, CollectiveKind kind, double bytes) {
    run::CollectiveRequest r;
    r.topology = config::load_topology_file(test::source_path("topologies/" + topology + ".yaml"));
    r.slice = hardware::normalized_slice(r.topology, *hardware::parse_slice_shape(slice));
    r.mesh.ici = *network::parse_axis_list(mesh);
    r.axes = {axis};
    r.kind = kind;
    r.bytes = bytes;
    r.calibration.collective_overhead = 0.0;
    return r;
}

// A v4 4x4x4 cube (every dimension wraps) with the mesh axes `ici` mapped onto it.
struct MappedCube {
    hardware::TopologySpec topology = config::load_topology_file(test::source_path("topologies/tpu-v4.yaml"));
    hardware::SliceShape slice = *hardware::parse_slice_shape("4x4x4");
    network::Torus torus{topology, slice};
    std::vector<network::AxisMapping> mapping;

    explicit MappedCube(std::vector<network::MeshAxis> ici) {
        network::MeshSpec mesh;
        mesh.ici = std::move(ici);
        mapping = std::get<std::vector<network::AxisMapping>>(network::map_mesh_axes(topology, slice, mesh));
    }
};

}  // namespace

TEST_CASE("uncontended rings and lines match the closed forms within 1%") {
    const double GiB = 1024.0 * 1024 * 1024;
    struct Case {
        const char* topology;
        const char* slice;
        const char* mesh;
        const char* axis;
    };
    // Rings of 4 and 16, a 2D and a 3D axis of equal dimensions, and lines (no wraparound).
    for (Case c : {Case{"tpu-v4", "4x4x4", "a=16,b=4", "b"}, Case{"tpu-v4", "4x4x4", "a=16,b=4", "a"},
                   Case{"tpu-v4", "4x4x4", "a=64", "a"}, Case{"tpu-v4", "16x16x16", "a=256,b=16", "b"},
                   Case{"tpu-v4", "2x2x4", "a=4,b=4", "b"}, Case{"tpu-v5e", "8x4", "X=8,Y=4", "Y"},
                   Case{"tpu-v5e", "16x16", "a=16,b=16", "b"},
                   // The two cores of a v2/v3 chip: the intra-chip link at chip.intra_chip_bandwidth.
                   Case{"tpu-v2", "2x2", "a=4,b=2", "b"}, Case{"tpu-v3", "2x2", "a=4,b=2", "b"}}) {
        for (auto kind :
             {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce}) {
            CAPTURE(c.slice);
            CAPTURE(c.mesh);
            CAPTURE(c.axis);
            CAPTURE(collectives::collective_name(kind));
            auto r = run::run_collective(request(c.topology, c.slice, c.mesh, c.axis, kind, 1 * GiB));
            CHECK(r.time_s == doctest::Approx(r.closed_form_s).epsilon(0.01));
        }
    }
}

TEST_CASE("time grows with bytes and falls with link bandwidth") {
    double previous = 0.0;
    for (double bytes = 1024; bytes <= 4.0 * 1024 * 1024 * 1024; bytes *= 4) {
        auto r = run::run_collective(
            request("tpu-v4", "4x4x4", "a=16,b=4", "a", CollectiveKind::all_reduce, bytes));
        CHECK(r.time_s > previous);
        previous = r.time_s;
    }
    auto slow = request("tpu-v4", "4x4x4", "a=16,b=4", "a", CollectiveKind::all_gather, 256e6);
    auto fast = slow;
    fast.topology.ici.link_bandwidth *= 2;
    CHECK(run::run_collective(fast).time_s < run::run_collective(slow).time_s);
}

TEST_CASE("a ring (wraparound) is faster than a line of the same length") {
    // z has length 4 in both; 4x4x4 wraps (whole cube), 2x2x4 does not.
    auto ring =
        run::run_collective(request("tpu-v4", "4x4x4", "a=16,z=4", "z", CollectiveKind::all_gather, 512e6));
    auto line =
        run::run_collective(request("tpu-v4", "2x2x4", "a=4,z=4", "z", CollectiveKind::all_gather, 512e6));
    REQUIRE(ring.parts.size() == 1);
    CHECK(ring.parts[0].wraps);
    CHECK_FALSE(line.parts[0].wraps);
    CHECK(line.time_s == doctest::Approx(2 * ring.time_s).epsilon(0.02));
}

TEST_CASE("symmetry: every group is alike and every ring link carries the same load") {
    auto r =
        run::run_collective(request("tpu-v4", "4x4x8", "a=32,b=4", "a", CollectiveKind::all_gather, 256e6));
    REQUIRE_FALSE(r.groups.empty());
    for (const auto& g : r.groups) CHECK(g.size() == 32);
    std::vector<int> seen(128, 0);
    for (const auto& g : r.groups) {
        for (int chip : g) ++seen[static_cast<std::size_t>(chip)];
    }
    for (int count : seen) CHECK(count == 1);
    for (const auto& use : r.links) {
        CAPTURE(use.dim);
        // All links used on a ring carry the same bytes: busiest == mean.
        CHECK(use.max_utilization == doctest::Approx(use.mean_utilization));
    }
}

TEST_CASE("contention: shared links slow collectives down, disjoint links do not") {
    const MappedCube cube({{"fsdp", 16}, {"tensor", 4}});
    const auto& torus = cube.torus;
    const auto& fsdp = cube.mapping[0].parts;    // y, z
    const auto& tensor = cube.mapping[1].parts;  // x
    auto plan = [&](const std::vector<network::AxisDimPart>& parts) {
        return collectives::plan_collective(torus, CollectiveKind::all_gather, 256e6, parts, 1e-6, 0.0);
    };
    double alone = run::run_concurrently(torus, {plan(fsdp)}, 1.0)[0];
    auto same = run::run_concurrently(torus, {plan(fsdp), plan(fsdp)}, 1.0);
    CHECK(same[0] > 1.9 * alone);
    CHECK(same[1] > 1.9 * alone);
    auto disjoint = run::run_concurrently(torus, {plan(fsdp), plan(tensor)}, 1.0);
    CHECK(disjoint[0] == doctest::Approx(alone));
}

TEST_CASE("max-min rates reused for flows seen before are the rates the solver gives") {
    // An all-gather and a reduce-scatter contending on 4x4x4 (fsdp on y, z), the second starting
    // while the first runs; then the same pair again once the network is idle. The second pair meets
    // only sets of flows the first already solved, so its rates all come from the scratch's memo, and
    // its durations must be the first pair's to the picosecond (an idle network evolves the same
    // wherever it starts).
    const MappedCube cube({{"fsdp", 16}, {"tensor", 4}});
    const auto& torus = cube.torus;
    const auto& mapping = cube.mapping;
    auto first =
        collectives::plan_collective(torus, CollectiveKind::all_gather, 256e6, mapping[0].parts, 1e-6, 0.0);
    auto second = collectives::plan_collective(torus, CollectiveKind::reduce_scatter, 64e6, mapping[0].parts,
                                               1e-6, 0.0);
    const auto bandwidth = network::effective_link_bandwidth(torus, 1.0);
    network::FlowNetwork::Scratch scratch(bandwidth.size());

    struct Done final : network::TransferListener {
        std::vector<core::Time> at = std::vector<core::Time>(4, -1);
        void on_transfer_done(core::Time now, std::uint64_t tag) override { at[tag] = now; }
    };
    struct Starter final : core::EventHandler {
        network::FlowNetwork* network = nullptr;
        const collectives::CommPlan* plans[2] = {nullptr, nullptr};
        Done* done = nullptr;
        void on_event(core::Time, std::uint64_t tag) override {
            network->start(plans[tag % 2]->phases, *done, tag);
        }
    };
    const core::Time offset = 37'000'000;        // 37 us into the first all-gather
    const core::Time again = 1'000'000'000'000;  // 1 s: long after both finished
    core::Engine engine;
    network::FlowNetwork network(engine, bandwidth, scratch, false);
    CHECK(scratch.rates.entries.empty());
    Done done;
    Starter starter;
    starter.network = &network;
    starter.plans[0] = &first;
    starter.plans[1] = &second;
    starter.done = &done;
    engine.schedule_at(0, starter, 0);
    engine.schedule_at(offset, starter, 1);
    engine.schedule_at(again, starter, 2);
    engine.schedule_at(again + offset, starter, 3);
    std::size_t solved_by_first_pair = 0;
    while (engine.step()) {
        if (engine.now() < again) solved_by_first_pair = scratch.rates.entries.size();
    }
    REQUIRE(done.at[1] < again);
    CHECK(solved_by_first_pair > 2);  // contention: sets of flows of both transfers were solved
    CHECK(scratch.rates.entries.size() == solved_by_first_pair);
    CHECK(done.at[2] - again == done.at[0]);
    CHECK(done.at[3] - again == done.at[1]);
    // Contention made the first all-gather slower than alone.
    CHECK(core::to_seconds(done.at[0]) > run::run_concurrently(torus, {first}, 1.0)[0]);

    // The first pair alone on a new network over the scratch: its end times.
    auto run_pair = [&](bool reuse_rates) {
        core::Engine pair_engine;
        network::FlowNetwork pair_network(pair_engine, bandwidth, scratch, false, reuse_rates);
        Done pair_done;
        starter.network = &pair_network;
        starter.done = &pair_done;
        pair_engine.schedule_at(0, starter, 0);
        pair_engine.schedule_at(offset, starter, 1);
        pair_engine.run();
        return std::make_pair(pair_done.at[0], pair_done.at[1]);
    };
    // A scratch whose owner keeps the plans alive (run::SimulationCache) keeps the memo for the
    // next network: the same pair solves nothing new, with the same times.
    scratch.keep_rates = true;
    CHECK(run_pair(true) == std::make_pair(done.at[0], done.at[1]));
    CHECK(scratch.rates.entries.size() == solved_by_first_pair);
    scratch.keep_rates = false;

    // Otherwise a network built later on the same scratch starts from an empty memo: the flows it
    // remembers may belong to plans that are gone.
    core::Engine other_engine;
    network::FlowNetwork other(other_engine, bandwidth, scratch, false);
    CHECK(scratch.rates.entries.empty());

    // The full simulation (reuse_rates off) solves every reallocation and remembers none, with
    // the same completion times.
    CHECK(run_pair(false) == std::make_pair(done.at[0], done.at[1]));
    CHECK(scratch.rates.entries.empty());
}

TEST_CASE("a phase replayed from its recorded run is the phase the network computes") {
    // A network whose scratch outlives it records how each phase runs when it starts on an idle
    // network, replays that when the phase starts on an idle network again, and takes the recorded
    // state up when another transfer starts within it. After every event its state must be that of
    // a network that computes every step (reuse_rates off): the same flows, bytes left and rates,
    // the same pending events, and the same end times. The reduce-scatter starts at several offsets
    // into the all-gather's replay: before its first flow, within its phases and after it.
    const MappedCube cube({{"fsdp", 16}, {"tensor", 4}});
    const auto& mapping = cube.mapping;
    auto gather = collectives::plan_collective(cube.torus, CollectiveKind::all_gather, 256e6,
                                               mapping[0].parts, 1e-6, 0.0);
    auto scatter = collectives::plan_collective(cube.torus, CollectiveKind::reduce_scatter, 64e6,
                                                mapping[0].parts, 1e-6, 0.0);
    const auto bandwidth = network::effective_link_bandwidth(cube.torus, 1.0);
    const core::Time apart = 1'000'000'000'000;  // 1 s: long after both finished
    const std::vector<core::Time> offsets = {0, 500'000, 3'000'000, 20'000'000, 37'000'000, 90'000'000};
    struct Done final : network::TransferListener {
        std::map<std::uint64_t, core::Time> at;
        void on_transfer_done(core::Time now, std::uint64_t tag) override { at[tag] = now; }
    };
    struct Starter final : core::EventHandler {
        network::FlowNetwork* network = nullptr;
        const collectives::CommPlan* plans[2] = {nullptr, nullptr};
        Done done;
        void on_event(core::Time, std::uint64_t tag) override {
            network->start(plans[tag % 2]->phases, done, tag);
        }
    };
    struct Run {
        core::Engine engine;
        network::FlowNetwork::Scratch scratch;
        network::FlowNetwork network;
        Starter starter;
        static network::FlowNetwork::Scratch kept(std::size_t links, bool keep) {
            network::FlowNetwork::Scratch scratch(links);
            scratch.keep_rates = keep;  // as run::SimulationCache's: trajectories are recorded
            return scratch;
        }
        Run(const std::vector<double>& bandwidth, bool reuse_rates)
            : scratch(kept(bandwidth.size(), reuse_rates)),
              network(engine, bandwidth, scratch, false, reuse_rates) {}
    };
    Run fast(bandwidth, true), exact(bandwidth, false);
    for (Run* run : {&fast, &exact}) {
        run->starter.network = &run->network;
        run->starter.plans[0] = &gather;
        run->starter.plans[1] = &scatter;
        // The all-gather alone twice (recorded, then replayed); then with the reduce-scatter, and
        // with it and a second all-gather, twice (the runs from each state the transfers that join
        // make are recorded, then replayed).
        run->engine.schedule_at(0, run->starter, 0);
        run->engine.schedule_at(apart, run->starter, 2);
        std::uint64_t tag = 4;
        core::Time at = 2 * apart;
        for (int round = 0; round < 2; ++round) {
            for (core::Time offset : offsets) {
                run->engine.schedule_at(at, run->starter, tag);
                run->engine.schedule_at(at + offset, run->starter, tag + 1);
                run->engine.schedule_at(at + 2 * offset + 1'000'000, run->starter, tag + 2);
                tag += 4;  // even: an all-gather, odd: the reduce-scatter
                at += apart;
            }
        }
    }
    network::FlowNetwork::Snapshot fast_state, exact_state;
    std::size_t events = 0;
    while (fast.engine.step()) {
        REQUIRE(exact.engine.step());
        ++events;
        REQUIRE(fast.engine.now() == exact.engine.now());
        fast.network.snapshot(fast.engine.now(), 0, fast_state);
        exact.network.snapshot(exact.engine.now(), 0, exact_state);
        REQUIRE(fast_state == exact_state);
        REQUIRE(fast.network.active_flows() == exact.network.active_flows());
        REQUIRE(fast.engine.pending().size() == exact.engine.pending().size());
    }
    CHECK(!exact.engine.step());
    CHECK(events == fast.engine.events_processed());
    CHECK(fast.starter.done.at.size() == 2 + 2 * 3 * offsets.size());
    CHECK(fast.starter.done.at == exact.starter.done.at);
    // The second all-gather ran as the first: an idle network evolves the same wherever it starts.
    CHECK(fast.starter.done.at[2] - apart == fast.starter.done.at[0]);
    std::size_t joined = 0;  // trajectories from a state a transfer joined
    for (const auto& trajectory : fast.scratch.rates.trajectories) joined += trajectory.parent >= 0 ? 1 : 0;
    CHECK(joined > offsets.size());
    CHECK(joined < fast.scratch.rates.trajectories.size());
    CHECK(exact.scratch.rates.trajectories.empty());
}

TEST_CASE("split dimensions: two axes on one torus dimension share its links") {
    // {data: 2, fsdp: 32} on 4x4x4: z is split between them, so they contend on z's links.
    const MappedCube cube({{"data", 2}, {"fsdp", 32}});
    const auto& torus = cube.torus;
    const auto& mapping = cube.mapping;
    auto data =
        collectives::plan_collective(torus, CollectiveKind::all_reduce, 256e6, mapping[0].parts, 1e-6, 0.0);
    auto fsdp =
        collectives::plan_collective(torus, CollectiveKind::all_reduce, 256e6, mapping[1].parts, 1e-6, 0.0);
    double data_alone = run::run_concurrently(torus, {data}, 1.0)[0];
    auto both = run::run_concurrently(torus, {data, fsdp}, 1.0);
    CHECK(both[0] > data_alone * 1.05);
}

TEST_CASE("torus graph: links, hops and the twisted torus") {
    auto v4 = config::load_topology_file(test::source_path("topologies/tpu-v4.yaml"));
    network::Torus cube(v4, *hardware::parse_slice_shape("4x4x4"));
    CHECK(cube.chips() == 64);
    CHECK(cube.links().size() == 64 * 6);  // every chip: 3 dimensions x 2 directions, all wrapping
    CHECK(cube.hops(0, cube.chip_at({2, 2, 2, 0})) == 6);
    CHECK(cube.hops(0, cube.chip_at({3, 3, 3, 0})) == 3);  // wraparound
    network::Torus mesh(v4, *hardware::parse_slice_shape("2x2x4"));
    // No wraparound: x and y are 8 lines of one link pair each (16 + 16 directed links), z is 4 lines
    // of 3 link pairs (24).
    CHECK(mesh.links().size() == 16 + 16 + 24);
    network::Torus regular(v4, *hardware::parse_slice_shape("4x4x8"));
    network::Torus twisted(v4, *hardware::parse_slice_shape("4x4x8"), true);
    CHECK(twisted.twisted());
    // Twisting the short dimensions' wraparound shortens the longest paths (ISCA 2023, Fig. 6).
    int regular_far = regular.hops(0, regular.chip_at({2, 2, 4, 0}));
    int twisted_far = twisted.hops(0, twisted.chip_at({2, 2, 4, 0}));
    CHECK(regular_far == 8);
    CHECK(twisted_far < regular_far);
}

TEST_CASE("a run alone without link bytes times the transfer exactly as one that counts them") {
    // Sweeps skip the per-link counts (they clear and scan every torus link); the duration and events
    // a replayed transfer stands for must not depend on it.
    const MappedCube cube({{"fsdp", 16}, {"tensor", 4}});
    const auto bandwidth = network::effective_link_bandwidth(cube.torus, 1.0);
    network::FlowNetwork::Scratch scratch(bandwidth.size());
    for (auto kind :
         {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce}) {
        for (const auto& axis : cube.mapping) {
            auto plan = collectives::plan_collective(cube.torus, kind, 96e6, axis.parts, 1e-6, 0.0);
            auto counted = scheduler::run_alone(plan.phases, bandwidth, scratch, true);
            auto uncounted = scheduler::run_alone(plan.phases, bandwidth, scratch, false);
            CHECK(counted.duration > 0);
            CHECK(uncounted.duration == counted.duration);
            CHECK(uncounted.events == counted.events);
            CHECK(uncounted.link_bytes.empty());
            // Every byte the plan sends crosses at least one link.
            double carried = 0.0;
            for (const auto& [link, bytes] : counted.link_bytes) carried += bytes;
            double sent = 0.0;
            for (const auto& phase : plan.phases)
                for (const auto& flow : phase.flows) sent += flow.bytes;
            CHECK(carried >= sent * (1.0 - 1e-9));
        }
    }
}
