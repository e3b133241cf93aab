#pragma once

#include <deque>
#include <string>
#include <string_view>

namespace podsim::parallel {

// Op names of a program, each stored once at an address that never moves, so that device ops can
// refer to them: a step repeats the same names in every microbatch.
class NameStore {
  public:
    std::string_view add(std::string name) { return names_.emplace_back(std::move(name)); }
    std::size_t size() const { return names_.size(); }

  private:
    std::deque<std::string> names_;  // a deque: adding never moves the names already stored
};

}  // namespace podsim::parallel
