// The cost of one progress-monitor callback: trt_tui::Monitor against a bare counting monitor, with
// the callbacks TensorRT makes (one phase, many steps) from 1 and from 4 threads at once. No TensorRT
// build: the monitor alone, so that what is measured is the monitor's own work per call.
//
// usage: callback_cost STEPS THREADS   -> one JSON line: {"threads":..,"bare_ns":..,"trt_tui_ns":..}
#include <NvInfer.h>
#include <trt_tui/monitor.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

class Bare : public nvinfer1::IProgressMonitor {
public:
    std::atomic<long> calls{0};
    void phaseStart(char const*, char const*, int32_t) noexcept override { ++calls; }
    bool stepComplete(char const*, int32_t) noexcept override { ++calls; return true; }
    void phaseFinish(char const*) noexcept override { ++calls; }
};

// Nanoseconds per stepComplete, `threads` threads each stepping its own phase `steps` times.
static double per_call(nvinfer1::IProgressMonitor& monitor, long steps, int threads) {
    monitor.phaseStart("Building engine", nullptr, threads);
    std::vector<std::string> names;
    for (int t = 0; t < threads; ++t) names.push_back("Timing graph nodes " + std::to_string(t));
    for (auto const& name : names) monitor.phaseStart(name.c_str(), "Building engine", static_cast<int32_t>(steps));
    auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
        workers.emplace_back([&, t] {
            for (long i = 0; i < steps; ++i) monitor.stepComplete(names[t].c_str(), static_cast<int32_t>(i));
        });
    for (auto& w : workers) w.join();
    double ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    for (auto const& name : names) monitor.phaseFinish(name.c_str());
    monitor.phaseFinish("Building engine");
    return ns / (static_cast<double>(steps) * threads);
}

int main(int argc, char** argv) {
    long steps = argc > 1 ? std::atol(argv[1]) : 1000000;
    int threads = argc > 2 ? std::atoi(argv[2]) : 1;
    Bare bare;
    double bare_ns = per_call(bare, steps, threads);
    Bare own;
    trt_tui::Monitor monitor(&own, "callback_cost");
    double ns = per_call(monitor, steps, threads);
    monitor.finished(true, 0);
    std::printf("{\"threads\": %d, \"steps\": %ld, \"bare_ns\": %.1f, \"trt_tui_ns\": %.1f}\n", threads, steps * threads,
                bare_ns, ns);
    return 0;
}
