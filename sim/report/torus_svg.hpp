#pragma once

#include <string>
#include <vector>

#include "network/torus.hpp"

namespace podsim::report {

// An SVG of the x-y plane (z = 0) of a slice: chips as circles, ICI links as grey lines, and the
// links that each group of a mesh axis uses for its rings in the group's colour (wraparound links
// drawn as arcs outside the grid).
std::string torus_svg(const network::Torus& torus, const std::vector<std::vector<int>>& groups,
                      const std::vector<network::AxisDimPart>& parts, const std::string& title);

}  // namespace podsim::report
