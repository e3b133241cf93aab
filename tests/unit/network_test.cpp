#include <doctest/doctest.h>

#include <set>

#include "collectives/closed_form.hpp"
#include "config/load.hpp"
#include "network/axis_mapping.hpp"
#include "run/simulate.hpp"
#include "support.hpp"

using namespace podsim;
using collectives::CollectiveKind;

namespace {
hardware::TopologySpec topology(const std::string& name) {
    return config::load_topology_file(test::source_path("topologies/" + name + ".yaml"));
}
std::vector<network::AxisMapping> mapping(const std::string& topo, const std::string& slice,
                                          std::vector<network::MeshAxis> axes) {
    network::MeshSpec mesh;
    mesh.ici = std::move(axes);
    auto shape = *hardware::parse_slice_shape(slice);
    auto result = network::map_mesh_axes(topology(topo), shape, mesh);
    REQUIRE(std::holds_alternative<std::vector<network::AxisMapping>>(result));
    return std::get<std::vector<network::AxisMapping>>(result);
}
}  // namespace

TEST_CASE("slice shapes and v4 wraparound (only whole 4x4x4 cubes are tori)") {
    auto v4 = topology("tpu-v4");
    CHECK(hardware::parse_slice_shape("4x4x8")->chips() == 128);
    CHECK_FALSE(hardware::parse_slice_shape("4x0x4"));
    CHECK_FALSE(hardware::parse_slice_shape("four"));
    CHECK_FALSE(hardware::slice_shape_error(v4, *hardware::parse_slice_shape("2x2x1")));
    CHECK(hardware::slice_shape_error(v4, *hardware::parse_slice_shape("3x4x4")));
    CHECK(hardware::slice_shape_error(v4, *hardware::parse_slice_shape("32x4x4")));
    auto cube = *hardware::parse_slice_shape("4x4x4");
    auto small = *hardware::parse_slice_shape("2x2x4");
    for (std::size_t d = 0; d < 3; ++d) {
        CHECK(hardware::dimension_wraps(v4, cube, d));
        CHECK_FALSE(hardware::dimension_wraps(v4, small, d));
    }
    auto v5e = topology("tpu-v5e");
    auto half = *hardware::parse_slice_shape("8x16");
    CHECK_FALSE(hardware::dimension_wraps(v5e, half, 0));
    CHECK(hardware::dimension_wraps(v5e, half, 1));
}

TEST_CASE("mesh axes map onto torus dimensions like create_device_mesh") {
    // 2x2x1 with one axis of 4: the largest exact subset of dimensions is x and y (z has length 1).
    auto m = mapping("tpu-v4", "2x2x1", {{"fsdp", 4}});
    REQUIRE(m[0].parts.size() == 2);
    CHECK(m[0].parts[0].dim == 0);
    CHECK(m[0].parts[1].dim == 1);
    CHECK_FALSE(m[0].parts[0].wraps);

    // 4x4x4 with {fsdp: 16, tensor: 4}: tensor (last, most local) takes one whole dimension (x),
    // fsdp the two others, all rings.
    auto m2 = mapping("tpu-v4", "4x4x4", {{"fsdp", 16}, {"tensor", 4}});
    REQUIRE(m2[1].parts.size() == 1);
    CHECK(m2[1].parts[0].dim == 0);
    CHECK(m2[1].parts[0].wraps);
    REQUIRE(m2[0].parts.size() == 2);
    CHECK(m2[0].parts[0].dim == 1);
    CHECK(m2[0].parts[1].dim == 2);

    // No exact match: {data: 2, fsdp: 32} on 4x4x4. 32 is no product of whole dimensions, so z is
    // split: fsdp takes x, y and the contiguous half of z (a line of 2); data the other factor of z,
    // stride 2, which closes over the wraparound into a ring.
    auto m3 = mapping("tpu-v4", "4x4x4", {{"data", 2}, {"fsdp", 32}});
    long fsdp_chips = 1;
    for (const auto& p : m3[1].parts) fsdp_chips *= p.size;
    CHECK(fsdp_chips == 32);
    long data_chips = 1;
    for (const auto& p : m3[0].parts) data_chips *= p.size;
    CHECK(data_chips == 2);
    REQUIRE(m3[1].parts.size() == 3);
    CHECK(m3[1].parts[2].dim == 2);
    CHECK(m3[1].parts[2].size == 2);
    CHECK_FALSE(m3[1].parts[2].wraps);
    CHECK(m3[0].parts[0].dim == 2);
    CHECK(m3[0].parts[0].stride == 2);
    CHECK(m3[0].parts[0].wraps);
}

TEST_CASE("mesh that does not match the slice is an error, not a crash") {
    network::MeshSpec mesh;
    mesh.ici = {{"fsdp", 8}};
    auto result = network::map_mesh_axes(topology("tpu-v4"), *hardware::parse_slice_shape("2x2x1"), mesh);
    REQUIRE(std::holds_alternative<std::string>(result));
    CHECK(std::get<std::string>(result).find("8 devices") != std::string::npos);
}

TEST_CASE("closed forms of the scaling book") {
    const double W = 45e9;  // one-way link bandwidth, v4
    const double hop = 1e-6;
    const double V = 64.0 * 1024 * 1024;  // 67108864 bytes gathered
    network::AxisDimPart ring{0, 4, 1, true};
    network::AxisDimPart line{0, 4, 1, false};
    // Ring of 4: each chip receives 3/4 V over 2 links: 50331648 / 9e10 = 5.5924e-4 s.
    auto t_ring = collectives::closed_form_ici(CollectiveKind::all_gather, V, {ring}, W, hop);
    CHECK(t_ring.time == doctest::Approx(V * 3 / 4 / (2 * W)));
    CHECK(t_ring.time == doctest::Approx(5.5924e-4).epsilon(1e-4));
    // A line takes twice as long.
    auto t_line = collectives::closed_form_ici(CollectiveKind::all_gather, V, {line}, W, hop);
    CHECK(t_line.time == doctest::Approx(2 * t_ring.time));
    // Two ring dimensions used concurrently (N = 16): V * 15/16 / (4 W).
    auto t_2d = collectives::closed_form_ici(CollectiveKind::all_gather, V,
                                             {ring, network::AxisDimPart{1, 4, 1, true}}, W, hop);
    CHECK(t_2d.time == doctest::Approx(V * 15 / 16 / (4 * W)));
    // all-reduce = reduce-scatter + all-gather.
    auto t_ar = collectives::closed_form_ici(CollectiveKind::all_reduce, V, {ring}, W, hop);
    CHECK(t_ar.time == doctest::Approx(2 * t_ring.time));
    // 1 KiB over a ring of 16 is latency-bound: 16/2 = 8 hops of 1 us.
    auto t_small = collectives::closed_form_ici(CollectiveKind::all_gather, 1024,
                                                {network::AxisDimPart{0, 16, 1, true}}, W, hop);
    CHECK(t_small.time == doctest::Approx(8e-6));
    // The two devices of a v2 chip (grid dimension 2) exchange over their own link at 60 GB/s,
    // not at the ICI rate: each receives V/2 in one direction.
    auto t_pair =
        collectives::closed_form_ici(CollectiveKind::all_gather, V, {network::AxisDimPart{2, 2, 1, false}}, W,
                                     hop, collectives::IntraChipLink{2, 60e9});
    CHECK(t_pair.time == doctest::Approx(V / 2 / 60e9));
}

TEST_CASE("explicit mesh.mapping places axes where the config says") {
    auto spec = test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-small
topology: tpu-v4
slice: 4x4x4
mesh:
  ici: {fsdp: 16, tensor: 4}
  mapping: {tensor: [z], fsdp: [x, y]}
training: {global_batch: 64, seq_len: 1024}
)");
    auto sim = run::simulate(spec);
    REQUIRE(sim.mapping.size() == 2);
    REQUIRE(sim.mapping[1].parts.size() == 1);
    CHECK(sim.mapping[1].parts[0].dim == 2);
    CHECK(sim.mapping[0].parts[0].dim == 0);
    CHECK(sim.mapping[0].parts[1].dim == 1);
}

TEST_CASE("DCN bandwidth per host is shared by the host's chips") {
    auto spec = test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-small
topology:
  schema: podsim.topology/v1
  name: per-host
  chip: {peak_flops: {bf16: 275 TFLOP/s}, hbm_capacity: 32 GiB, hbm_bandwidth: 1.2 TB/s}
  ici: {dims: 3, link_bandwidth: 45 GB/s, hop_latency: 1 us, wraparound: whole_cubes_of_4, max_slice: 16x16x16}
  host: {chips_per_host: 4}
  dcn: {bandwidth_per_host: 100 Gb/s}
slice: 2x2x1
slices: 2
mesh: {ici: {fsdp: 4}, dcn: {data: 2}}
training: {global_batch: 64, seq_len: 1024}
)");
    // 100 Gb/s = 12.5 GB/s per host, over 4 chips.
    CHECK(spec.topology.dcn.bandwidth_per_chip == doctest::Approx(12.5e9 / 4));
    auto report = run::simulate(spec).report;
    bool has_dcn = false;
    for (const auto& r : report.resources) has_dcn = has_dcn || r.name == "dcn";
    CHECK(has_dcn);
}

TEST_CASE("a sweep's cached plans number their paths: plans that differ only in bytes share path ids") {
    // The rate memo is keyed by path ids, and max-min rates depend on the links alone: an all-gather
    // of 1 MB and one of 3 MB over the same ring meet the same flow sets.
    auto v4 = topology("tpu-v4");
    run::SimulationCache cache;
    auto torus = cache.torus(v4, *hardware::parse_slice_shape("4x4x4"), false);
    const std::vector<network::AxisDimPart> ring = {network::AxisDimPart{0, 4, 1, true}};
    const std::vector<network::AxisDimPart> other_ring = {network::AxisDimPart{1, 4, 1, true}};
    auto small = cache.plan(torus, CollectiveKind::all_gather, 1e6, ring, 1e-6, 0.0, 1.0, false);
    auto large = cache.plan(torus, CollectiveKind::all_gather, 3e6, ring, 1e-6, 0.0, 1.0, false);
    auto other = cache.plan(torus, CollectiveKind::all_gather, 1e6, other_ring, 1e-6, 0.0, 1.0, false);
    REQUIRE(small != large);
    REQUIRE(small->plan.phases.size() == large->plan.phases.size());
    std::set<std::uint32_t> ring_ids;
    for (std::size_t p = 0; p < small->plan.phases.size(); ++p) {
        const auto& a = small->plan.phases[p].flows;
        const auto& b = large->plan.phases[p].flows;
        REQUIRE(a.size() == b.size());
        for (std::size_t f = 0; f < a.size(); ++f) {
            CHECK(a[f].path_id != 0);
            CHECK(a[f].path_id == b[f].path_id);
            CHECK(a[f].links == b[f].links);
            CHECK(a[f].bytes * 3.0 == doctest::Approx(b[f].bytes));
            ring_ids.insert(a[f].path_id);
        }
    }
    // Flows on other links get other ids.
    for (const auto& phase : other->plan.phases)
        for (const auto& flow : phase.flows) CHECK(ring_ids.count(flow.path_id) == 0);
    // Three times the bytes on the same paths: the same rates, so the same time per byte once the
    // latency is taken out.
    double latency = 0.0;
    for (const auto& phase : small->plan.phases) latency += phase.latency;
    const double small_s = core::to_seconds(small->alone.duration) - latency;
    const double large_s = core::to_seconds(large->alone.duration) - latency;
    CHECK(small_s > 0.0);
    CHECK(large_s == doctest::Approx(3.0 * small_s).epsilon(1e-6));
}
