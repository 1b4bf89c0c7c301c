// trt-tui's preload: observe and cancel the TensorRT builds of an unmodified C++ program.
//
// `trt-tui run` starts the program with this library in LD_PRELOAD. It interposes the builder's C
// entry point, `createInferBuilder_INTERNAL` (what `nvinfer1::createInferBuilder` calls), and hands
// the program a builder whose implementation object (`apiv::VBuilder`, to which every inline method
// of `IBuilder` forwards) forwards in turn to TensorRT's, except the two build calls: each build gets
// a `trt_tui::Monitor` on its config for its duration, chained to the monitor the program set (if
// any, called exactly as often), and reports its outcome. The logger the program gives the builder is
// teed the same way (`TeeLogger`): its lines still reach the program's logger, unfiltered, and each
// build's log shows in trt-tui. Everything else is TensorRT's own.
//
// It stands aside, handing back TensorRT's builder untouched, where it could not be right: in a
// Python process (trt-tui's Python hook observes those builds), for a program compiled against
// another TensorRT major.minor than this library was (its `VBuilder` may differ; said once on
// stderr), and for a build whose monitor is already a `trt_tui::Monitor` (the program uses the header:
// each such monitor claims itself through `trt_tui_preload_claim`). Compiled with hidden visibility:
// nothing of the header inside it is shared with a program's own copy, which may be another version.
// Compiled by `trt-tui cpp build` (or on the first `trt-tui run` of a program that is not Python)
// against the TensorRT headers that `TRT_TUI_TENSORRT_INCLUDE` names.
#include <dlfcn.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

static int32_t trt_tui_library_version() noexcept {
    using Version = int32_t (*)();
    auto version = reinterpret_cast<Version>(::dlsym(RTLD_DEFAULT, "getInferLibVersion"));
    return version != nullptr ? version() : 0;
}
#define TRT_TUI_LIBRARY_VERSION trt_tui_library_version

#include <trt_tui/monitor.h>

namespace {

using namespace nvinfer1;

// Counts what a stream build writes, for the engine's size.
class CountingWriter : public IStreamWriter {
public:
    explicit CountingWriter(IStreamWriter& inner) : inner_(inner) {}
    int64_t write(void const* data, int64_t nbBytes) override {
        int64_t n = inner_.write(data, nbBytes);
        if (n > 0) written += n;
        return n;
    }
    int64_t written = 0;

private:
    IStreamWriter& inner_;
};

// The one logger TensorRT gets from this process (it keeps the first it is given): every line goes on,
// unfiltered, to the program's own logger, and to the build that logged it, in the way trt-tui's Python
// hook routes them: the build driven by the logging thread, else (a thread TensorRT started) the only
// build running, or every running build, marked, when several run at once.
class TeeLogger : public ILogger {
public:
    void log(Severity severity, AsciiChar const* msg) noexcept override {
        if (ILogger* own = program_.load()) own->log(severity, msg);
        if (severity > min_severity_ && severity > Severity::kERROR) return;  // most lines: dropped here
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            auto mine = builds_.find(std::this_thread::get_id());
            if (mine != builds_.end()) {
                mine->second->log(severity, msg, min_severity_);
            } else if (builds_.size() == 1) {
                builds_.begin()->second->log(severity, msg, min_severity_);
            } else if (!builds_.empty()) {
                std::string shared = "(from a TensorRT thread shared by " + std::to_string(builds_.size()) +
                                     " builds) " + msg;
                for (auto& build : builds_) build.second->log(severity, shared.c_str(), min_severity_);
            }
        } catch (...) {
        }
    }

    ILogger* adopt(ILogger* program) noexcept {
        ILogger* none = nullptr;
        program_.compare_exchange_strong(none, program);
        return this;
    }

    void bind(trt_tui::Monitor* build) {
        std::lock_guard<std::mutex> lock(mutex_);
        builds_[std::this_thread::get_id()] = build;
    }

    void unbind() {
        std::lock_guard<std::mutex> lock(mutex_);
        builds_.erase(std::this_thread::get_id());
    }

private:
    std::atomic<ILogger*> program_{nullptr};
    Severity const min_severity_ = std::getenv("TRT_TUI_RUN_VERBOSE") != nullptr &&
                                           std::string(std::getenv("TRT_TUI_RUN_VERBOSE")) == "1"
                                       ? Severity::kVERBOSE
                                       : Severity::kINFO;
    std::mutex mutex_;
    std::unordered_map<std::thread::id, trt_tui::Monitor*> builds_;
};

TeeLogger& tee_logger() {
    static TeeLogger* tee = new TeeLogger();  // never destroyed: TensorRT may log until the very end
    return *tee;
}

// One observed build: its monitor on the config, chained to the program's, and its log lines routed to it.
class ObservedBuild {
public:
    explicit ObservedBuild(IBuilderConfig& config) : config_(config), own_(config.getProgressMonitor()), monitor_(own_) {
        config_.setProgressMonitor(&monitor_);
        tee_logger().bind(&monitor_);
        monitor_.started();
    }
    ~ObservedBuild() {
        tee_logger().unbind();
        config_.setProgressMonitor(own_);
    }
    trt_tui::Monitor& monitor() { return monitor_; }

private:
    IBuilderConfig& config_;
    IProgressMonitor* own_;
    trt_tui::Monitor monitor_;
};

// The program's `trt_tui::Monitor`s (the header's), which report their builds themselves: each
// claims itself while it lives (`trt_tui_preload_claim`).
std::mutex claimed_mutex;
std::unordered_set<void*> claimed;

bool observed_by_header(IProgressMonitor* own) noexcept {
    std::lock_guard<std::mutex> lock(claimed_mutex);
    return own != nullptr && claimed.count(own) != 0;
}

class ObservedBuilder : public apiv::VBuilder {
public:
    explicit ObservedBuilder(apiv::VBuilder* real) : real_(real) {}

    IHostMemory* buildSerializedNetwork(INetworkDefinition& network, IBuilderConfig& config) noexcept override {
        if (observed_by_header(config.getProgressMonitor())) return real_->buildSerializedNetwork(network, config);
        IHostMemory* plan = nullptr;
        {
            ObservedBuild build(config);
            plan = real_->buildSerializedNetwork(network, config);
            build.monitor().finished(plan);
        }
        return plan;
    }

    bool buildSerializedNetworkToStream(INetworkDefinition& network, IBuilderConfig& config,
                                        IStreamWriter& writer) noexcept override {
        if (observed_by_header(config.getProgressMonitor()))
            return real_->buildSerializedNetworkToStream(network, config, writer);
        bool built = false;
        {
            ObservedBuild build(config);
            CountingWriter counting(writer);
            built = real_->buildSerializedNetworkToStream(network, config, counting);
            build.monitor().finished(built, static_cast<std::size_t>(counting.written));
        }
        return built;
    }

    // Everything else is TensorRT's.
    int32_t getMaxDLABatchSize() const noexcept override { return real_->getMaxDLABatchSize(); }
    int32_t getNbDLACores() const noexcept override { return real_->getNbDLACores(); }
    void setGpuAllocator(IGpuAllocator* allocator) noexcept override { real_->setGpuAllocator(allocator); }
    IBuilderConfig* createBuilderConfig() noexcept override { return real_->createBuilderConfig(); }
    INetworkDefinition* createNetworkV2(NetworkDefinitionCreationFlags flags) noexcept override {
        return real_->createNetworkV2(flags);
    }
    IOptimizationProfile* createOptimizationProfile() noexcept override { return real_->createOptimizationProfile(); }
    void setErrorRecorder(IErrorRecorder* recorder) noexcept override { real_->setErrorRecorder(recorder); }
    IErrorRecorder* getErrorRecorder() const noexcept override { return real_->getErrorRecorder(); }
    void reset() noexcept override { real_->reset(); }
    bool isNetworkSupported(INetworkDefinition const& network, IBuilderConfig const& config) const noexcept override {
        return real_->isNetworkSupported(network, config);
    }
    ILogger* getLogger() const noexcept override { return real_->getLogger(); }
    bool setMaxThreads(int32_t maxThreads) noexcept override { return real_->setMaxThreads(maxThreads); }
    int32_t getMaxThreads() const noexcept override { return real_->getMaxThreads(); }
    IPluginRegistry& getPluginRegistry() noexcept override { return real_->getPluginRegistry(); }

private:
    apiv::VBuilder* real_;
};

// The builder the program gets: TensorRT's, reached through `ObservedBuilder`; deleting it deletes TensorRT's.
class Builder : public IBuilder {
public:
    explicit Builder(IBuilder* real) : real_(real), observed_(Impl::of(*real)) { mImpl = &observed_; }
    ~Builder() noexcept override { delete real_; }

private:
    struct Impl : IBuilder {  // reads the protected `mImpl` of TensorRT's builder
        static apiv::VBuilder* of(IBuilder& builder) { return builder.*(&Impl::mImpl); }
    };
    IBuilder* real_;
    ObservedBuilder observed_;
};

}  // namespace

extern "C" __attribute__((visibility("default"))) void trt_tui_preload_claim(void* monitor, int mine) noexcept {
    try {
        std::lock_guard<std::mutex> lock(claimed_mutex);
        if (mine) claimed.insert(monitor);
        else claimed.erase(monitor);
    } catch (...) {
    }
}

namespace {

bool in_python() noexcept { return ::dlsym(RTLD_DEFAULT, "Py_IsInitialized") != nullptr; }

using CreateBuilder = void* (*)(void*, int32_t);

// TensorRT's own entry point. Usually the next definition after this library's (RTLD_NEXT); for a
// caller that was itself loaded with dlopen (Python's bindings), TensorRT is not in the global scope:
// it is looked up among the caller's own dependencies, where this library is not.
CreateBuilder real_entry(void* caller) noexcept {
    static std::atomic<CreateBuilder> found{nullptr};
    if (CreateBuilder known = found.load()) return known;
    auto entry = reinterpret_cast<CreateBuilder>(::dlsym(RTLD_NEXT, "createInferBuilder_INTERNAL"));
    Dl_info info;
    if (entry == nullptr && ::dladdr(caller, &info) != 0 && info.dli_fname != nullptr) {
        if (void* handle = ::dlopen(info.dli_fname, RTLD_LAZY | RTLD_NOLOAD)) {
            entry = reinterpret_cast<CreateBuilder>(::dlsym(handle, "createInferBuilder_INTERNAL"));
            ::dlclose(handle);
        }
    }
    for (char const* soname : {"libtensorrt_rtx.so.1", "libnvinfer.so.10", "libnvinfer.so"}) {
        if (entry != nullptr) break;
        if (void* handle = ::dlopen(soname, RTLD_LAZY | RTLD_NOLOAD)) {
            entry = reinterpret_cast<CreateBuilder>(::dlsym(handle, "createInferBuilder_INTERNAL"));
            ::dlclose(handle);
        }
    }
    if (entry == reinterpret_cast<CreateBuilder>(&createInferBuilder_INTERNAL)) entry = nullptr;
    if (entry != nullptr) found.store(entry);
    return entry;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) void* createInferBuilder_INTERNAL(void* logger,
                                                                                    int32_t version) noexcept {
    CreateBuilder const real = real_entry(__builtin_return_address(0));
    if (real == nullptr) return nullptr;
    if (in_python()) return real(logger, version);
    bool same_version = version / 100 == NV_TENSORRT_VERSION / 100;
    void* made = real(same_version && logger != nullptr ? tee_logger().adopt(static_cast<ILogger*>(logger)) : logger,
                      version);
    if (made == nullptr) return made;
    if (!same_version) {
        static std::atomic<bool> said{false};
        if (!said.exchange(true)) {
            std::fprintf(stderr,
                         "trt-tui: this program was compiled against TensorRT %d.%d, trt-tui's preload against %d.%d:"
                         " its builds are not observed (compile the preload against the program's headers:"
                         " TRT_TUI_TENSORRT_INCLUDE=... trt-tui cpp build)\n",
                         static_cast<int>(version / 10000), static_cast<int>(version / 100 % 100),
                         static_cast<int>(NV_TENSORRT_MAJOR), static_cast<int>(NV_TENSORRT_MINOR));
        }
        return made;
    }
    try {
        trt_tui::detail::Channel::instance().set_standalone(false);
        return static_cast<IBuilder*>(new Builder(static_cast<IBuilder*>(made)));
    } catch (...) {
        return made;
    }
}
