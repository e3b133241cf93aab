#include "report/torus_svg.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace podsim::report {
namespace {

constexpr double kSpacing = 70.0;
constexpr double kMargin = 70.0;
constexpr const char* kColours[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
                                    "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"};

}  // namespace

std::string torus_svg(const network::Torus& torus, const std::vector<std::vector<int>>& groups,
                      const std::vector<network::AxisDimPart>& parts, const std::string& title) {
    const auto& shape = torus.shape();
    const int nx = shape[0];
    const int ny = shape.size() > 1 ? shape[1] : 1;
    // Wide enough for the title (about 7 px per character at 14 px).
    const double width =
        std::max(2 * kMargin + (nx - 1) * kSpacing, 20.0 + 7.0 * static_cast<double>(title.size()));
    const double height = 2 * kMargin + (ny - 1) * kSpacing + 30;
    auto x_of = [&](int x) { return kMargin + x * kSpacing; };
    auto y_of = [&](int y) { return 30 + kMargin + y * kSpacing; };
    std::string svg = fmt::format(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
        "font-family=\"sans-serif\">\n"
        "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
        "<text x=\"10\" y=\"20\" font-size=\"14\">{}</text>\n",
        width, height, title);

    auto in_plane = [&](int chip) {
        const auto& c = torus.coord_of(chip);
        return c[2] == 0 && c[3] == 0;
    };
    auto draw_link = [&](const network::Link& link, const char* colour, double stroke) {
        const auto& a = torus.coord_of(link.from);
        const auto& b = torus.coord_of(link.to);
        double x1 = x_of(a[0]), y1 = y_of(a[1]), x2 = x_of(b[0]), y2 = y_of(b[1]);
        // Offset the two directions so both are visible.
        double off = link.direction > 0 ? -3.0 : 3.0;
        if (link.dim == 0) {
            y1 += off;
            y2 += off;
        } else {
            x1 += off;
            x2 += off;
        }
        if (!link.wraparound) {
            svg += fmt::format(
                "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"{}\" "
                "stroke-width=\"{}\"/>\n",
                x1, y1, x2, y2, colour, stroke);
            return;
        }
        // Wraparound: an arc bulging outside the grid.
        double bulge = (link.dim == 0 ? -1 : 1) * (30 + (link.direction > 0 ? 0 : 8));
        double cx = link.dim == 0 ? (x1 + x2) / 2 : std::min(x1, x2) - std::abs(bulge);
        double cy = link.dim == 0 ? std::min(y1, y2) + bulge : (y1 + y2) / 2;
        svg += fmt::format(
            "<path d=\"M {:.1f} {:.1f} Q {:.1f} {:.1f} {:.1f} {:.1f}\" fill=\"none\" stroke=\"{}\" "
            "stroke-width=\"{}\" stroke-dasharray=\"4 3\"/>\n",
            x1, y1, cx, cy, x2, y2, colour, stroke);
    };

    for (const auto& link : torus.links()) {
        if (link.dim > 1 || !in_plane(link.from) || !in_plane(link.to)) continue;
        draw_link(link, "#dddddd", 1.5);
    }
    // Links between consecutive members of a group along the axis' parts carry its ring traffic.
    std::vector<int> group_of(static_cast<std::size_t>(torus.chips()), -1);
    for (std::size_t g = 0; g < groups.size(); ++g) {
        for (int m : groups[g]) group_of[static_cast<std::size_t>(m)] = static_cast<int>(g);
    }
    // Each member sends to the next one along every part of the axis (and back): mark those paths.
    std::vector<int> used_by(torus.links().size(), -1);
    for (std::size_t g = 0; g < groups.size(); ++g) {
        for (int member : groups[g]) {
            for (const auto& part : parts) {
                const int length = torus.shape()[static_cast<std::size_t>(part.dim)];
                const int position = torus.coord_of(member)[static_cast<std::size_t>(part.dim)];
                const int index = (position % (part.size * part.stride)) / part.stride;
                if (index + 1 == part.size && !part.wraps) continue;  // the end of a line
                for (int direction : {+1, -1}) {
                    int chip = member;
                    int start = direction > 0 ? position : (position + part.stride) % length;
                    if (direction < 0) {
                        auto c = torus.coord_of(member);
                        c[static_cast<std::size_t>(part.dim)] = start;
                        chip = torus.chip_at(c);
                    }
                    for (int step = 0; step < part.stride; ++step) {
                        int link = torus.link_from(chip, part.dim, direction);
                        if (link < 0) break;
                        used_by[static_cast<std::size_t>(link)] = static_cast<int>(g);
                        chip = torus.links()[static_cast<std::size_t>(link)].to;
                    }
                }
            }
        }
    }
    for (std::size_t l = 0; l < torus.links().size(); ++l) {
        const auto& link = torus.links()[l];
        if (used_by[l] < 0 || link.dim > 1 || !in_plane(link.from) || !in_plane(link.to)) continue;
        draw_link(link, kColours[static_cast<std::size_t>(used_by[l]) % 10], 3.0);
    }
    for (int c = 0; c < torus.chips(); ++c) {
        if (!in_plane(c)) continue;
        const auto& coord = torus.coord_of(c);
        int g = group_of[static_cast<std::size_t>(c)];
        const char* colour = g >= 0 ? kColours[static_cast<std::size_t>(g) % 10] : "#444444";
        svg += fmt::format(
            "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"13\" fill=\"white\" stroke=\"{}\" "
            "stroke-width=\"3\"/>\n<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" "
            "text-anchor=\"middle\">{},{}</text>\n",
            x_of(coord[0]), y_of(coord[1]), colour, x_of(coord[0]), y_of(coord[1]) + 4, coord[0], coord[1]);
    }
    svg += "</svg>\n";
    return svg;
}

}  // namespace podsim::report
