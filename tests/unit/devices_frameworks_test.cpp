#include <doctest/doctest.h>

#include "config/load.hpp"
#include "cost/calibration.hpp"
#include "network/axis_mapping.hpp"
#include "network/torus.hpp"
#include "run/collective_run.hpp"
#include "run/simulate.hpp"
#include "support.hpp"
#include "workload/model_spec.hpp"

using namespace podsim;

namespace {
hardware::TopologySpec topology(const std::string& name) {
    return config::load_topology_file(test::source_path("topologies/" + name + ".yaml"));
}
hardware::SliceShape slice(const std::string& text) {
    return *hardware::parse_slice_shape(text);
}
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

TEST_CASE("devices per chip: v2/v3 TensorCores are devices, v4/v5p megacore and v5e/v6e are one") {
    auto v3 = topology("tpu-v3");
    CHECK(v3.chip.tensorcores_per_chip == 2);
    CHECK(v3.chip.devices_per_chip == 2);
    // A v3-8 is 4 chips (2x2) and 8 devices; the grid adds the chip's two devices as a last dimension.
    CHECK(hardware::slice_devices(v3, slice("2x2")) == 8);
    CHECK(hardware::device_grid(v3, slice("2x2")).dims == std::vector<int>{2, 2, 2});
    for (const std::string name : {"tpu-v4", "tpu-v5p"}) {
        auto t = topology(name);
        CHECK(t.chip.tensorcores_per_chip == 2);
        CHECK(t.chip.devices_per_chip == 1);
        CHECK(hardware::device_grid(t, slice("2x2x2")).dims == std::vector<int>{2, 2, 2});
    }
    for (const std::string name : {"tpu-v5e", "tpu-v6e"}) {
        auto t = topology(name);
        CHECK(t.chip.tensorcores_per_chip == 1);
        CHECK(t.chip.devices_per_chip == 1);
    }
    // Each device has half the chip: v3 123 TFLOP/s and 32 GiB per chip (Cloud TPU v3 docs).
    CHECK(v3.chip.device_peak_flops_for(core::DType::bf16) == doctest::Approx(61.5e12));
    CHECK(v3.chip.device_hbm_capacity() == doctest::Approx(16 * kGiB));
    CHECK(v3.chip.device_hbm_bandwidth() == doctest::Approx(450e9));
}

TEST_CASE("meshes count devices: a mesh of 8 on a v3-8, the most local axis on a chip's two cores") {
    auto v3 = topology("tpu-v3");
    network::MeshSpec mesh;
    mesh.ici = {{"data", 4}, {"tensor", 2}};
    auto result = network::map_mesh_axes(v3, slice("2x2"), mesh);
    REQUIRE(std::holds_alternative<std::vector<network::AxisMapping>>(result));
    const auto& m = std::get<std::vector<network::AxisMapping>>(result);
    // JAX's v2/v3 device order (mesh_utils _TRAY_RING_ORDER reshaped to (4, 2)) pairs the two cores of
    // each chip on the last axis.
    REQUIRE(m[1].parts.size() == 1);
    CHECK(m[1].parts[0].dim == hardware::intra_chip_dimension(v3));
    CHECK(m[0].parts.size() == 2);

    // 4 devices on 4 chips of 2 devices each is a mismatch, and says why.
    mesh.ici = {{"data", 4}};
    auto wrong = network::map_mesh_axes(v3, slice("2x2"), mesh);
    REQUIRE(std::holds_alternative<std::string>(wrong));
    CHECK(std::get<std::string>(wrong).find("8 (4 chips x 2 devices per chip)") != std::string::npos);

    // A one-chip job may use one of the chip's devices (PyTorch/XLA world_size 1 on a v3-8).
    CHECK(hardware::devices_per_chip_in_use(v3, slice("1x1"), 1) == 1);
    CHECK(hardware::devices_per_chip_in_use(v3, slice("2x2"), 4) == 2);
}

TEST_CASE("transfers between the two devices of a chip use the intra-chip link, not ICI") {
    auto v2 = topology("tpu-v2");
    network::Torus torus(v2, slice("2x2"));
    int intra = 0;
    for (const auto& link : torus.links()) {
        if (!link.intra_chip) continue;
        ++intra;
        CHECK(link.dim == 2);
        CHECK(link.bandwidth == doctest::Approx(60e9));
    }
    CHECK(intra == 8);  // 4 chips, one link each way between their two devices

    // The scaling book's v2 reduce-scatter (mesh 4x2 on 8 v2 cores, over the 2-way axis): each device
    // sends half of 134 MB to the other at 60 GB/s, plus one hop (1 us) and the launch overhead.
    run::CollectiveRequest r;
    r.topology = v2;
    r.slice = slice("2x2");
    r.mesh.ici = {{"a", 4}, {"b", 2}};
    r.kind = collectives::CollectiveKind::reduce_scatter;
    r.axes = {"b"};
    r.bytes = 134e6;
    const double expected = 67e6 / 60e9 + 1e-6 + r.calibration.collective_overhead;
    CHECK(run::run_collective(r).time_s == doctest::Approx(expected).epsilon(0.005));
    // The ICI efficiency does not apply to the intra-chip link.
    r.calibration.ici_link_efficiency = 0.5;
    CHECK(run::run_collective(r).time_s == doctest::Approx(expected).epsilon(0.005));
}

TEST_CASE("a v3-8 run is 8 devices of half a chip each") {
    auto spec = test::load_config("tests/validation/vit-cifar-mesh-8x1.yaml");
    auto report = run::simulate(spec).report;
    CHECK(report.chips == 8);
    CHECK(report.devices_per_chip == 2);
    CHECK(report.peak_flops_per_chip == doctest::Approx(123e12 / 2));
    CHECK(report.memory.capacity_bytes == doctest::Approx(16 * kGiB));
    // MFU is the same counted by chips or by devices: 8 x 61.5 = 4 x 123 TFLOP/s.
    CHECK(report.mfu == doctest::Approx(report.model_flops_per_step / (report.step_time_s * 4 * 123e12)));
}

TEST_CASE("PyTorch/XLA SPMD: one process per host, GSPMD's async collectives, lazy tracing") {
    parallel::RuntimeSpec spmd;
    spmd.framework = parallel::Framework::pytorch_xla_spmd;
    CHECK(spmd.async());
    CHECK(spmd.host_blocks_device());
    CHECK_FALSE(spmd.process_per_chip());
    CHECK(spmd.full_model_on_host());
    parallel::RuntimeSpec multi;
    multi.framework = parallel::Framework::pytorch_xla;
    CHECK_FALSE(multi.async());
    CHECK(multi.process_per_chip());
    // One matmul efficiency for every framework; both PyTorch/XLA modes trace eager modules, so
    // both pay the traffic of an eager attention chain with dropout (Hugging Face GPT-2's), and
    // neither pays it without dropout (Hugging Face Llama's); JAX programs never do.
    const auto cal = cost::Calibration::defaults();
    CHECK(cal.attention_traffic(parallel::Framework::pytorch_xla_spmd, true) ==
          cal.attention_traffic_pytorch_xla);
    CHECK(cal.attention_traffic(parallel::Framework::pytorch_xla, true) == cal.attention_traffic_pytorch_xla);
    CHECK(cal.attention_traffic(parallel::Framework::pytorch_xla, false) == 1.0);
    CHECK(cal.attention_traffic(parallel::Framework::pytorch_xla_spmd, false) == 1.0);
    CHECK(cal.attention_traffic(parallel::Framework::jax, true) == 1.0);
    CHECK(cal.host_overhead(parallel::Framework::pytorch_xla_spmd) == cal.host_overhead_pytorch_xla);
}

TEST_CASE("attention dropout: Hugging Face's defaults by family, and the eager chain it adds") {
    // GPT2Config.attn_pdrop = 0.1 and BertConfig.attention_probs_dropout_prob = 0.1; Llama and
    // MaxText decoders and ViT (attention_probs_dropout_prob = 0.0) drop nothing.
    CHECK(test::load_config("configs/gpt2-2b-fsdp-v4-8.yaml").model.attention_dropout == 0.1);
    auto llama = test::load_config("configs/llama2-70b-fsdp-tp-v4-256-spmd.yaml");
    CHECK(llama.model.attention_dropout == 0.0);
    const double without = run::simulate(llama).report.step_time_s;
    llama.model.attention_dropout = 0.1;  // the same graph with Hugging Face GPT-2's attention chain
    CHECK(run::simulate(llama).report.step_time_s > without);
}

TEST_CASE("Llama-2-70B fsdp 32 x tensor 4 on v4-256 fits host RAM under SPMD, not multi-process") {
    auto spec = test::load_config("configs/llama2-70b-fsdp-tp-v4-256-spmd.yaml");
    const double params = static_cast<double>(workload::count_params(spec.model).total);
    auto spmd = run::simulate(spec).report;
    // One process per host builds the model once, in fp32: 69.0B x 4 bytes = 257 GiB of 372.5 GiB.
    CHECK(spmd.host_peak_bytes == doctest::Approx(params * 4));
    CHECK(spmd.host_peak_bytes / kGiB == doctest::Approx(256.96).epsilon(0.001));
    CHECK(spmd.host_fits);
    CHECK(spmd.memory.fits);
    // The same run as multi-process PyTorch/XLA: 4 processes per host, 4 copies (1027.83 GiB).
    spec.runtime.framework = parallel::Framework::pytorch_xla;
    auto multi = run::simulate(spec).report;
    CHECK(multi.host_peak_bytes / kGiB == doctest::Approx(1027.83).epsilon(0.001));
    CHECK_FALSE(multi.host_fits);
}

TEST_CASE("PyTorch/XLA's eager attention: more HBM traffic on the S x S scores, nothing else") {
    // Both runs use async collectives and the same host, so only the framework's fusion differs.
    auto config = [](const std::string& framework, const std::string& attention) {
        return test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-small
topology: tpu-v4
slice: 2x2x1
mesh: {fsdp: 4}
training: {global_batch: 16, seq_len: 1024, attention: )" +
                                   attention + R"(}
runtime: {framework: )" + framework +
                                   R"(, async_collectives: true, host_overhead: 1 ms}
)");
    };
    const double factor = cost::Calibration::defaults().attention_traffic_pytorch_xla;
    REQUIRE(factor > 1.0);
    auto jax = run::simulate(config("jax", "dot_product"));
    auto torch = run::simulate(config("pytorch-xla-spmd", "dot_product"));
    REQUIRE(jax.program.ops.size() == torch.program.ops.size());
    int scores_ops = 0;
    for (std::size_t i = 0; i < jax.program.ops.size(); ++i) {
        const auto& op = jax.program.ops[i];
        CHECK(op.attention_scores == torch.program.ops[i].attention_scores);
        if (op.attention_scores) {
            ++scores_ops;
            CHECK(torch.costs[i].memory_seconds == doctest::Approx(factor * jax.costs[i].memory_seconds));
            CHECK(torch.costs[i].compute_seconds == doctest::Approx(jax.costs[i].compute_seconds));
        } else {
            CHECK(torch.costs[i].seconds == doctest::Approx(jax.costs[i].seconds));
        }
    }
    // Per layer: scores, softmax and context, their recompute-free backward (two matmuls each and
    // the softmax's): 3 forward + 5 backward.
    CHECK(scores_ops == 12 * 8);
    // A flash kernel keeps the scores on chip: no op carries them, and the frameworks cost the same.
    auto jax_flash = run::simulate(config("jax", "flash"));
    auto torch_flash = run::simulate(config("pytorch-xla-spmd", "flash"));
    for (std::size_t i = 0; i < jax_flash.program.ops.size(); ++i) {
        CHECK_FALSE(jax_flash.program.ops[i].attention_scores);
        CHECK(torch_flash.costs[i].seconds == doctest::Approx(jax_flash.costs[i].seconds));
    }
}
