#pragma once

#include "core/diagnostics.hpp"
#include "hlo/module.hpp"

namespace podsim::hlo {

// What lowering relies on, checked once for modules read from text or a proto: an entry, a root in
// every computation, parameters numbered 0..n-1, the computations every instruction needs
// (fusion, while, call, conditional, async wrappers), tuple indices in range and no computation
// that calls itself. Fills Computation::parameters. Reports into `d` (at the instruction's line for
// text, by name for a proto).
void check_module(Module& module, core::Diagnostics& d);

}  // namespace podsim::hlo
