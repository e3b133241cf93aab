#pragma once

#include <string>

#include "hlo/module.hpp"

namespace podsim::hlo {

// Reads a serialized xla.HloProto (a module with its buffer assignment, as --xla_dump_hlo_as_proto
// writes *.after_optimizations.hlo.pb) or a bare xla.HloModuleProto (xla/service/hlo.proto), field
// by field without generated code. Instructions follow the module's schedule when it has one.
// Throws core::UserError for bad input (`FILE: error: at byte N: ...`).
Module read_proto(const std::string& path, const std::string& bytes);

}  // namespace podsim::hlo
