// trt-tui: one build's events, from TensorRT's threads to the process's one sender thread.
//
// A callback pushes a small record under a short lock: constant work, no I/O, no formatting. Steps
// of one phase collapse to the newest while they wait (TensorRT reports thousands a second; the
// consumers show the latest), starts and finishes keep their order. The sender drains the records
// and turns them into the versioned JSON lines of `events-v1.json` (or the standalone bars).
#pragma once

#include <atomic>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <vector>

namespace trt_tui {
namespace detail {

inline double monotonic_now() noexcept {  // CLOCK_MONOTONIC, as Python's time.monotonic()
    timespec ts;
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

inline double unix_now() noexcept {
    timespec ts;
    ::clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Event {
    enum Kind : unsigned char { kPhaseStart, kStep, kPhaseFinish, kState, kLog };
    Kind kind = kStep;
    int phase = 0;
    int parent = -1;  // -1: a top-level phase
    int number = 0;   // num_steps of a start, the step of a step, the severity of a log line
    double t = 0.0;   // seconds since the build started
    std::string name;   // the phase's name, or the state ("building", "succeeded", ...)
    std::string text;   // a state's detail (or error, when `failed`), a log line's message
    std::string backend;  // on `building`
    long long engine_bytes = -1;
    double at = 0.0;  // unix time of a state
};

class Feed {
public:
    Feed(long long local, double t0, std::string name, bool reported)
        : local(local), t0(t0), name(std::move(name)), reported(reported) {}

    long long const local;  // the build's id on this process's connection
    double const t0;        // its start, on the monotonic clock
    std::string const name;
    bool const reported;  // true: to trt-tui; false: the standalone bars
    std::atomic<bool> cancel_requested{false};  // set by trt-tui's cancel (the sender thread)
    bool announced = false;  // the sender's, under its lock
    bool closed = false;     // likewise: its last events were delivered (a snapshot may still name it)

    void push(Event&& event) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (event.kind == Event::kPhaseFinish && static_cast<std::size_t>(event.phase) < pending_.size())
            pending_[event.phase] = -1;
        events_.push_back(std::move(event));
    }

    void step(int phase, int step, double t) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (static_cast<std::size_t>(phase) >= pending_.size()) pending_.resize(phase + 1, -1);
        int at = pending_[phase];
        if (at >= 0) {  // a step of this phase still waits: it becomes this one
            events_[at].number = step;
            events_[at].t = t;
            return;
        }
        pending_[phase] = static_cast<int>(events_.size());
        Event e;
        e.kind = Event::kStep;
        e.phase = phase;
        e.number = step;
        e.t = t;
        events_.push_back(std::move(e));
    }

    std::vector<Event> drain() {
        std::vector<Event> out;
        std::lock_guard<std::mutex> lock(mutex_);
        out.swap(events_);
        for (int& at : pending_) at = -1;
        return out;
    }

private:
    std::mutex mutex_;
    std::vector<Event> events_;
    std::vector<int> pending_;  // by phase id: where its waiting step is in `events_`, or -1
};

// `text` as a JSON string literal, all ASCII: other characters as \u escapes, invalid UTF-8 as U+FFFD.
inline void json_string(std::string& out, std::string const& text) {
    auto escape = [&out](unsigned code) {
        char buf[16];
        std::snprintf(buf, sizeof(buf), "\\u%04x", code);
        out += buf;
    };
    out += '"';
    std::size_t i = 0, n = text.size();
    while (i < n) {
        unsigned char c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            if (c == '"' || c == '\\') {
                out += '\\';
                out += static_cast<char>(c);
            } else if (c < 0x20 || c == 0x7f) {
                escape(c);
            } else {
                out += static_cast<char>(c);
            }
            ++i;
            continue;
        }
        int extra = c >= 0xf0 && c < 0xf5 ? 3 : c >= 0xe0 ? 2 : c >= 0xc2 && c < 0xe0 ? 1 : -1;
        unsigned code = extra == 3 ? c & 0x07u : extra == 2 ? c & 0x0fu : c & 0x1fu;
        bool valid = extra > 0;
        for (int k = 1; valid && k <= extra; ++k) {
            if (i + k >= n) {
                valid = false;
                break;
            }
            unsigned char follow = static_cast<unsigned char>(text[i + k]);
            valid = (follow & 0xc0) == 0x80;
            code = code << 6 | (follow & 0x3fu);
        }
        if (valid && ((extra == 2 && (code < 0x800 || (code >= 0xd800 && code < 0xe000))) ||
                      (extra == 3 && (code < 0x10000 || code > 0x10ffff))))
            valid = false;
        if (!valid) {
            escape(0xfffd);
            ++i;
            continue;
        }
        if (code >= 0x10000) {
            code -= 0x10000;
            escape(0xd800 + (code >> 10));
            escape(0xdc00 + (code & 0x3ff));
        } else {
            escape(code);
        }
        i += static_cast<std::size_t>(extra) + 1;
    }
    out += '"';
}

inline void json_number(std::string& out, double value) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.6f", value);
    out += buf;
}

// One event as a line of protocol version 1 (`job`: the build's id on this connection).
inline std::string to_json(Event const& e, long long job) {
    static char const* const kinds[] = {"phase_start", "step", "phase_finish", "state", "log"};
    static char const* const severities[] = {"internal error", "error", "warning", "info", "verbose"};
    std::string out = "{\"v\":1,\"event\":\"";
    out += kinds[e.kind];
    out += "\",\"job\":" + std::to_string(job) + ",\"t\":";
    json_number(out, e.t);
    switch (e.kind) {
        case Event::kPhaseStart:
            out += ",\"phase\":" + std::to_string(e.phase) + ",\"name\":";
            json_string(out, e.name);
            out += ",\"parent\":" + (e.parent < 0 ? std::string("null") : std::to_string(e.parent));
            out += ",\"num_steps\":" + std::to_string(e.number);
            break;
        case Event::kStep:
            out += ",\"phase\":" + std::to_string(e.phase) + ",\"step\":" + std::to_string(e.number);
            break;
        case Event::kPhaseFinish:
            out += ",\"phase\":" + std::to_string(e.phase);
            break;
        case Event::kLog:
            out += ",\"severity\":\"";
            out += severities[e.number >= 0 && e.number <= 4 ? e.number : 4];
            out += "\",\"message\":";
            json_string(out, e.text);
            break;
        case Event::kState:
            out += ",\"state\":";
            json_string(out, e.name);
            if (!e.text.empty()) {
                out += e.name == "failed" ? ",\"error\":" : ",\"detail\":";
                json_string(out, e.text);
            }
            if (!e.backend.empty()) {
                out += ",\"backend\":";
                json_string(out, e.backend);
            }
            if (e.engine_bytes >= 0) out += ",\"engine_bytes\":" + std::to_string(e.engine_bytes);
            out += ",\"at\":";
            json_number(out, e.at);
            break;
    }
    out += '}';
    return out;
}

}  // namespace detail
}  // namespace trt_tui
