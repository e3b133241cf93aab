#pragma once

#include <string>
#include <vector>

namespace podsim::profile {

// XProf pod-viewer JSON (the TensorBoard profile plugin's pod viewer tool).
struct PodViewerAllReduce {
    std::string name;
    double data_bytes = 0.0;
    double duration_s = 0.0;  // as recorded (durationUs)
    long occurrences = 0;
};

struct PodViewerCore {
    int core = 0;
    int chip = 0;
    double total_s = 0.0;
    double high_flops_compute_s = 0.0;
    double all_reduce_s = 0.0;  // crsDurationUs
    double send_s = 0.0;
    double recv_s = 0.0;
    double host_infeed_s = 0.0;
};

struct PodViewer {
    std::string tpu_type;
    int cores = 0;
    int hosts = 0;
    int step = 0;
    std::vector<PodViewerAllReduce> all_reduces;  // of the first step in the file
    std::vector<PodViewerCore> per_core;
};

// Reads a pod_viewer.json; throws core::UserError with file and byte offset on malformed input.
PodViewer read_pod_viewer(const std::string& path);

}  // namespace podsim::profile
