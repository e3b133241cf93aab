#pragma once

#include <string>
#include <string_view>

#include "hlo/module.hpp"

namespace podsim::hlo {

// Parses an HloModule as XLA prints it (HloModule::ToString, compiled.as_text(), the
// *.after_optimizations.txt of --xla_dump_to). Every construct it cannot read is reported as
// `FILE:LINE:COL: error: INSTRUCTION: message` (all of them, up to a limit) in a core::UserError.
Module read_text(const std::string& path, std::string_view text);

// Whether `bytes` start like HLO text (after blank lines and comments: `HloModule`).
bool looks_like_hlo_text(std::string_view bytes);

}  // namespace podsim::hlo
