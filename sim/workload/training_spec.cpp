#include "workload/training_spec.hpp"

namespace podsim::workload {

std::string_view optimizer_name(Optimizer optimizer) {
    switch (optimizer) {
        case Optimizer::adam:
            return "adam";
        case Optimizer::adamw:
            return "adamw";
        case Optimizer::adafactor:
            return "adafactor";
        case Optimizer::sgd:
            return "sgd";
    }
    return "?";
}

std::string_view remat_name(Remat remat) {
    switch (remat) {
        case Remat::none:
            return "none";
        case Remat::full:
            return "full";
        case Remat::save_dots:
            return "save_dots";
        case Remat::attention:
            return "attention";
    }
    return "?";
}

}  // namespace podsim::workload
