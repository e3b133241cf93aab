#pragma once

#include <string>
#include <string_view>

#include "hlo/module.hpp"

namespace podsim::hlo {

// Whether a file's bytes (decompressed) are a compiled XLA module: HLO text, or an HloProto /
// HloModuleProto (told from other protobuf files by the name ending in .pb).
bool is_hlo_module(const std::string& path, std::string_view bytes);

// Reads a module from a file: HLO text or a serialized proto, either gzipped or not, told apart by
// content. Throws core::UserError (FILE:LINE:COL for text, FILE and byte offset for a proto).
Module read_module_file(const std::string& path);
// The same from bytes already read (`name` is what messages call them).
Module read_module(const std::string& name, const std::string& bytes);

}  // namespace podsim::hlo
