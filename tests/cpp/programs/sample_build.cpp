// A C++ program that builds a TensorRT engine from an ONNX file, as programs do: its own logger,
// optionally its own progress monitor (which counts its calls), its own failure path. Compiled
// twice by the tests: with -DWITH_TRT_TUI it chains its monitor into trt_tui::Monitor (the header);
// without, it knows nothing of trt-tui (what `trt-tui run` observes through its preload).
//
// usage: sample_build MODEL.onnx OUT.engine [--threads N] [--no-monitor] [--no-output] [--name NAME]
//        [--slow PHASE MS]
// (--slow: its own monitor takes MS milliseconds over each step of PHASE, as a slow monitor would,
// which keeps a build in that phase long enough for a test to cancel it there)
// prints, per build: "own monitor calls: N", "engine bytes: N" and "build seconds: S" (how long
// buildSerializedNetwork took), or "build failed"; then "own logger lines: N"; exits 1 if any failed.
#include <NvInfer.h>
#include <NvOnnxParser.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#ifdef WITH_TRT_TUI
#include <trt_tui/monitor.h>
#endif

class Logger : public nvinfer1::ILogger {
public:
    std::atomic<long> lines{0};  // every line TensorRT gave it, whatever its severity

private:
    void log(Severity severity, char const* msg) noexcept override {
        ++lines;
        if (severity <= Severity::kERROR) std::fprintf(stderr, "TensorRT: %s\n", msg);
    }
};

static std::string slow_phase;
static bool no_output = false;  // --no-output: the network's outputs unmarked, a build TensorRT refuses
static int slow_ms = 0;

class CountingMonitor : public nvinfer1::IProgressMonitor {
public:
    std::atomic<long> calls{0};
    void phaseStart(char const*, char const*, int32_t) noexcept override { ++calls; }
    bool stepComplete(char const* phase, int32_t) noexcept override {
        ++calls;
        if (slow_ms > 0 && slow_phase == phase) std::this_thread::sleep_for(std::chrono::milliseconds(slow_ms));
        return true;
    }
    void phaseFinish(char const*) noexcept override { ++calls; }
};

static bool build_one(Logger& logger, char const* model, std::string const& out, bool own_monitor,
                      std::string const& name) {
    std::unique_ptr<nvinfer1::IBuilder> builder(nvinfer1::createInferBuilder(logger));
    std::unique_ptr<nvinfer1::INetworkDefinition> network(builder->createNetworkV2(0));
    std::unique_ptr<nvonnxparser::IParser> parser(nvonnxparser::createParser(*network, logger));
    if (!parser->parseFromFile(model, static_cast<int>(nvinfer1::ILogger::Severity::kWARNING))) {
        std::fprintf(stderr, "cannot parse %s\n", model);
        return false;
    }
    while (no_output && network->getNbOutputs() > 0) network->unmarkOutput(*network->getOutput(0));
    std::unique_ptr<nvinfer1::IBuilderConfig> config(builder->createBuilderConfig());
    config->setNbComputeCapabilities(1);
    config->setComputeCapability(nvinfer1::ComputeCapability::kSM89, 0);
    CountingMonitor counting;
    if (own_monitor) config->setProgressMonitor(&counting);
#ifdef WITH_TRT_TUI
    trt_tui::Monitor monitor(own_monitor ? &counting : nullptr, name);
    config->setProgressMonitor(&monitor);
#else
    (void)name;
#endif
#ifdef WITH_TRT_TUI
    monitor.started();
#endif
    auto start = std::chrono::steady_clock::now();
    std::unique_ptr<nvinfer1::IHostMemory> plan(builder->buildSerializedNetwork(*network, *config));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
#ifdef WITH_TRT_TUI
    monitor.finished(plan.get());
#endif
    if (own_monitor) std::printf("own monitor calls: %ld\n", counting.calls.load());
    if (!plan) {
        std::printf("build failed: %s\n", model);  // the program's own failure path: nothing written
        return false;
    }
    std::ofstream(out, std::ios::binary).write(static_cast<char const*>(plan->data()), plan->size());
    std::printf("engine bytes: %zu\n", plan->size());
    std::printf("build seconds: %.6f\n", seconds);
    return true;
}

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL.onnx OUT.engine [--threads N] [--no-monitor] [--name NAME]\n", argv[0]);
        return 2;
    }
    int threads = 1;
    bool own_monitor = true;
    std::string name;
    for (int i = 3; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) threads = std::atoi(argv[++i]);
        else if (!std::strcmp(argv[i], "--no-monitor")) own_monitor = false;
        else if (!std::strcmp(argv[i], "--no-output")) no_output = true;
        else if (!std::strcmp(argv[i], "--name") && i + 1 < argc) name = argv[++i];
        else if (!std::strcmp(argv[i], "--slow") && i + 2 < argc) {
            slow_phase = argv[++i];
            slow_ms = std::atoi(argv[++i]);
        }
    }
    Logger logger;
    std::atomic<int> failed{0};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        std::string out = threads == 1 ? std::string(argv[2]) : std::string(argv[2]) + "." + std::to_string(t);
        workers.emplace_back([&, out] {
            if (!build_one(logger, argv[1], out, own_monitor, name)) ++failed;
        });
    }
    for (auto& w : workers) w.join();
    std::printf("own logger lines: %ld\n", logger.lines.load());
    std::fflush(stdout);
    return failed ? 1 : 0;
}
