#include <doctest/doctest.h>

#include <optional>
#include <string>
#include <utility>

#include "parallel/device_program.hpp"
#include "parallel/op_deps.hpp"
#include "support.hpp"

using namespace podsim;

TEST_CASE("OpDeps holds six deps in place and spills the rest to the heap, keeping their order") {
    parallel::OpDeps deps = {4, 2};
    CHECK(deps.size() == 2);
    for (int d = 10; d < 20; ++d) deps.push_back(d);  // 12 deps: past the 6 held in place
    REQUIRE(deps.size() == 12);
    CHECK(deps[0] == 4);
    CHECK(deps[1] == 2);
    CHECK(deps[11] == 19);

    parallel::OpDeps copy = deps;
    parallel::OpDeps moved = std::move(deps);
    CHECK(copy == moved);
    CHECK(deps.empty());  // a moved-from OpDeps is empty
    copy.truncate(3);
    CHECK(copy == parallel::OpDeps{4, 2, 10});
    copy = {7};
    CHECK(copy == parallel::OpDeps{7});
    deps.push_back(1);  // usable again after the move
    CHECK(deps == parallel::OpDeps{1});
}

TEST_CASE("A copy of a device program keeps its op names after the simulation is gone") {
    std::optional<parallel::DeviceProgram> program;
    {
        run::Simulation sim = run::simulate(test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-small
topology: tpu-v4
slice: 2x2x1
mesh: {fsdp: 4}
training: {global_batch: 16, seq_len: 128, microbatches: 4}
)"));
        program = sim.program;
    }
    // The names are those the lowering gives each graph op, and each parameter group's gathers
    // are named by group and pass (docs/model.md).
    bool embed = false, gather = false;
    for (const auto& op : program->ops) {
        embed = embed || (op.name == "embed" && op.microbatch == 1);
        gather = gather || op.name == "layer0.all-gather.bwd";
    }
    CHECK(embed);
    CHECK(gather);
    // Every microbatch repeats the same names: each is stored once, not once per microbatch.
    CHECK(program->names->size() < program->ops.size() / 2);
}

TEST_CASE("Programs partitioned from one lowered step share its names through the cache") {
    // Two meshes over one lowered step (same model and training): the second partition finds every
    // name the first stored, and a program outlives the cache that named it.
    const char* base = R"(
schema: podsim.run/v1
model: gpt2-small
topology: tpu-v4
slice: 2x2x1
training: {global_batch: 16, seq_len: 128, microbatches: 2}
)";
    std::optional<parallel::DeviceProgram> first;
    std::size_t stored_after_first = 0;
    {
        run::SimulationCache cache;
        first = run::simulate(test::run_from_text(std::string(base) + "mesh: {fsdp: 4}\n"), cache).program;
        stored_after_first = first->names->size();
        auto second =
            run::simulate(test::run_from_text(std::string(base) + "mesh: {data: 2, fsdp: 2}\n"), cache);
        CHECK(second.program.names == first->names);
        // The data axis adds one gradient all-reduce name per parameter group, and nothing else.
        std::size_t all_reduces = 0;
        for (const auto& op : second.program.ops)
            all_reduces += op.category == parallel::OpCategory::all_reduce ? 1 : 0;
        CHECK(all_reduces > 0);
        CHECK(first->names->size() == stored_after_first + all_reduces);
    }
    bool gather = false;
    for (const auto& op : first->ops) gather = gather || op.name == "layer0.all-gather.fwd";
    CHECK(gather);
}
