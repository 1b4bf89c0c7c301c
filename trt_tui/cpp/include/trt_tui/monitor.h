// trt-tui for C++: `trt_tui::Monitor`, a TensorRT progress monitor that makes a build observable
// and cancelable.
//
//     #include <trt_tui/monitor.h>
//     trt_tui::Monitor monitor(&my_monitor);          // the program's own monitor, if it has one
//     config->setProgressMonitor(&monitor);
//     auto* plan = builder->buildSerializedNetwork(*network, *config);
//     monitor.finished(plan);                          // the outcome, and the engine's size
//
// (or `monitor.build(*builder, *network, *config)`, which does the three.) Under `trt-tui run`, or
// while a trt-tui app listens on this user's collector socket, the build is reported to trt-tui
// through the same versioned events as a Python build (phases, steps, the outcome, the engine's
// size), and a cancel from trt-tui makes the next `stepComplete` return false. Otherwise, on a
// terminal, stderr shows the nested phase bars, redrawn in place; plain lines when not a terminal.
//
// TensorRT calls a monitor from several threads at once: every callback takes one short lock, does
// constant work and no I/O (a queue, drained by one sender thread per process), and never lets an
// exception out. The program's own monitor is called exactly as often as this one, after it; either
// may cancel. One Monitor follows one build at a time: a build on each of several threads needs a
// Monitor each (as it needs a builder config each). `cancel()` is for the program's own Ctrl-C.
//
// Header-only: it needs TensorRT's headers (`NvInfer.h`, full TensorRT or TensorRT for RTX: the same
// `IProgressMonitor`; only TensorRT for RTX is tested by trt-tui), -pthread, and -ldl where glibc is
// older than 2.34.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <NvInfer.h>
#include <dlfcn.h>

#include "detail/channel.h"

namespace trt_tui {

class Monitor : public nvinfer1::IProgressMonitor {
public:
    // `own`: the program's own monitor (called after this one on every callback), or null.
    // `name`: the build as trt-tui shows it (the model's file, say); empty: "PROGRAM #N".
    explicit Monitor(nvinfer1::IProgressMonitor* own = nullptr, std::string name = std::string()) noexcept
        : own_(own), name_(std::move(name)) {
        try {
            detail::Channel& channel = detail::Channel::instance();
            channel.set_backend(backend_name(), library_version());
            channel.prepare();
            claim(1);
        } catch (...) {
        }
    }

    Monitor(Monitor const&) = delete;
    Monitor& operator=(Monitor const&) = delete;

    // A build still open ends here, as one the program did not say the outcome of.
    ~Monitor() noexcept override {
        claim(0);
        end(false, -1, "the program did not report how the build ended", false);
    }

    void phaseStart(char const* phaseName, char const* parentPhase, int32_t nbSteps) noexcept override {
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            std::shared_ptr<detail::Feed> feed = feed_ ? feed_ : open();
            detail::Event e;
            e.kind = detail::Event::kPhaseStart;
            e.phase = static_cast<int>(names_.size());
            e.parent = -1;
            if (parentPhase != nullptr) {
                auto parent = active_.find(parentPhase);
                if (parent != active_.end()) e.parent = parent->second;
            }
            e.number = nbSteps;
            e.t = detail::monotonic_now() - feed->t0;
            e.name = phaseName != nullptr ? phaseName : "";
            active_[e.name] = e.phase;
            names_.push_back(e.name);
            parents_.push_back(e.parent);
            feed->push(std::move(e));
        } catch (...) {
        }
        if (own_ != nullptr) own_->phaseStart(phaseName, parentPhase, nbSteps);
    }

    bool stepComplete(char const* phaseName, int32_t step) noexcept override {
        bool go_on = true;
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            if (feed_ && phaseName != nullptr) {
                auto phase = active_.find(phaseName);
                if (phase != active_.end()) {
                    feed_->step(phase->second, step, detail::monotonic_now() - feed_->t0);
                    if (cancelled_in_.empty() && (cancel_.load() || feed_->cancel_requested.load()))
                        cancelled_in_ = path(phase->second);
                }
            }
            go_on = cancelled_in_.empty();
        } catch (...) {
        }
        if (own_ != nullptr && !own_->stepComplete(phaseName, step)) {
            own_cancelled_.store(true);
            go_on = false;
        }
        return go_on;
    }

    void phaseFinish(char const* phaseName) noexcept override {
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            if (feed_ && phaseName != nullptr) {
                auto phase = active_.find(phaseName);
                if (phase != active_.end()) {
                    detail::Event e;
                    e.kind = detail::Event::kPhaseFinish;
                    e.phase = phase->second;
                    e.t = detail::monotonic_now() - feed_->t0;
                    active_.erase(phase);
                    feed_->push(std::move(e));
                }
            }
        } catch (...) {
        }
        if (own_ != nullptr) own_->phaseFinish(phaseName);
    }

    // A line of TensorRT's log, for this build's log in trt-tui (a program's logger may pass its
    // lines on; the preload does). Lines less severe than `min_severity` are dropped at once, errors
    // never: the last one says why a build failed. Constant work, like the callbacks.
    void log(nvinfer1::ILogger::Severity severity, char const* msg,
             nvinfer1::ILogger::Severity min_severity = nvinfer1::ILogger::Severity::kINFO) noexcept {
        int level = static_cast<int>(severity);
        bool error = severity <= nvinfer1::ILogger::Severity::kERROR;
        if ((severity > min_severity && !error) || msg == nullptr) return;
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!feed_) return;
            std::string text = msg;
            if (error && !cancelled_in_.empty() && text.find("BuildCanceled") != std::string::npos)
                level = static_cast<int>(nvinfer1::ILogger::Severity::kINFO);  // asked for: not an error
            else if (error)
                last_error_ = text;
            if (severity > min_severity) return;
            detail::Event e;
            e.kind = detail::Event::kLog;
            e.number = level;
            e.t = detail::monotonic_now() - feed_->t0;
            e.text = std::move(text);
            feed_->push(std::move(e));
        } catch (...) {
        }
    }

    // The build starts now (optional: its first callback opens it otherwise). Called just before
    // `buildSerializedNetwork`, its clock starts there, and a build TensorRT refuses before any
    // phase (an invalid network) is still seen, with TensorRT's error.
    void started() noexcept {
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!feed_) open();
        } catch (...) {
        }
    }

    // Cancel the build (the program's own Ctrl-C handler may call it): the next step returns false.
    void cancel() noexcept { cancel_.store(true); }

    // Whether the build was cancelled: by `cancel()`, by trt-tui, or by the program's own monitor.
    bool cancelled() const noexcept { return cancel_.load() || own_cancelled_.load() || cancelled_seen(); }

    // The build returned: `engine` is what `buildSerializedNetwork` gave (null: no engine). Reports
    // the outcome and the engine's size; the build's last events are delivered before it returns.
    void finished(nvinfer1::IHostMemory const* engine) noexcept {
        end(engine != nullptr, engine != nullptr ? static_cast<long long>(engine->size()) : -1, "", true);
    }

    // As `finished(engine)` for a build that wrote its engine elsewhere (`buildSerializedNetworkToStream`).
    void finished(bool built, std::size_t engine_bytes) noexcept {
        end(built, built ? static_cast<long long>(engine_bytes) : -1, "", true);
    }

    // Builds with this monitor on `config` (the config's own monitor, if any and none was given,
    // is chained) and reports the outcome: the three steps of the example above.
    nvinfer1::IHostMemory* build(nvinfer1::IBuilder& builder, nvinfer1::INetworkDefinition& network,
                                 nvinfer1::IBuilderConfig& config) noexcept {
        nvinfer1::IProgressMonitor* before = config.getProgressMonitor();
        if (before != this) {
            if (own_ == nullptr) own_ = before;
            config.setProgressMonitor(this);
        }
        detail::Channel::instance().prepare();
        started();
        nvinfer1::IHostMemory* plan = builder.buildSerializedNetwork(network, config);
        finished(plan);
        return plan;
    }

private:
    static std::string backend_name() {
#ifdef TRT_MAJOR_RTX
        return "tensorrt-rtx";
#else
        return "tensorrt";
#endif
    }

    static std::string library_version() {
#ifdef TRT_TUI_LIBRARY_VERSION
        int32_t v = TRT_TUI_LIBRARY_VERSION();  // the preload's: it links no TensorRT library
#else
        int32_t v = getInferLibVersion();  // the library that runs, not the headers compiled against
#endif
        return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
    }

    // Tells trt-tui's preload, where `trt-tui run` loaded one, that this monitor reports its builds
    // itself (the preload then leaves them to it). A C function: the two may be different versions.
    void claim(int mine) noexcept {
        using Claim = void (*)(void*, int);
        if (auto preload = reinterpret_cast<Claim>(::dlsym(RTLD_DEFAULT, "trt_tui_preload_claim")))
            preload(static_cast<nvinfer1::IProgressMonitor*>(this), mine);
    }

    // Under `mutex_`: the first callback of a build opens it.
    std::shared_ptr<detail::Feed> open() {
        detail::Channel& channel = detail::Channel::instance();
        feed_ = channel.open(name_);
        active_.clear();
        names_.clear();
        parents_.clear();
        cancelled_in_.clear();
        last_error_.clear();
        own_cancelled_.store(false);
        detail::Event e;
        e.kind = detail::Event::kState;
        e.name = "building";
        e.text = "pid " + std::to_string(::getpid());
        e.backend = channel.backend() + " " + library_version();
        e.at = detail::unix_now();
        feed_->push(std::move(e));
        return feed_;
    }

    // "A › B › C": the phase and those it runs in. Under `mutex_`.
    std::string path(int phase) const {
        std::vector<int> chain;
        for (int p = phase; p >= 0 && chain.size() < 64; p = parents_[p]) chain.push_back(p);
        std::string out;
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
            if (!out.empty()) out += " \xe2\x80\xba ";
            out += names_[*it];
        }
        return out;
    }

    bool cancelled_seen() const noexcept {
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            return !cancelled_in_.empty();
        } catch (...) {
            return false;
        }
    }

    // `again`: connect for the next build, where an app started meanwhile (not from the destructor).
    void end(bool built, long long engine_bytes, char const* unknown, bool again) noexcept {
        std::shared_ptr<detail::Feed> feed;
        try {
            std::lock_guard<std::mutex> lock(mutex_);
            if (!feed_) return;
            feed.swap(feed_);
            detail::Event e;
            e.kind = detail::Event::kState;
            e.t = detail::monotonic_now() - feed->t0;
            e.at = detail::unix_now();
            if (built) {
                e.name = "succeeded";
                e.engine_bytes = engine_bytes;
            } else if (!cancelled_in_.empty()) {
                e.name = "cancelled";
                e.text = "cancelled in " + cancelled_in_ + (feed->cancel_requested.load() ? "" : " (by the program)");
            } else if (own_cancelled_.load()) {
                e.name = "cancelled";
                e.text = "cancelled by the program's own progress monitor";
            } else {
                e.name = "failed";
                e.text = *unknown != '\0'        ? std::string(unknown)
                         : !last_error_.empty() ? "build failed: " + last_error_
                                                : std::string("build failed: TensorRT returned no engine");
            }
            feed->push(std::move(e));
        } catch (...) {
            return;
        }
        detail::Channel::instance().close(feed);
        if (again) detail::Channel::instance().prepare();
    }

    nvinfer1::IProgressMonitor* own_;
    std::string const name_;
    mutable std::mutex mutex_;
    std::shared_ptr<detail::Feed> feed_;  // the open build, if any
    std::unordered_map<std::string, int> active_;  // running phases by name (names are reused once finished)
    std::vector<std::string> names_;  // by phase id
    std::vector<int> parents_;        // by phase id
    std::string cancelled_in_;  // the phases a cancel took effect in, once it did
    std::string last_error_;    // TensorRT's last error line in this build (`log`)
    std::atomic<bool> cancel_{false};
    std::atomic<bool> own_cancelled_{false};
};

}  // namespace trt_tui
