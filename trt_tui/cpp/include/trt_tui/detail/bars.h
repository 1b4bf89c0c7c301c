// trt-tui: the standalone display, for a build no trt-tui observes.
//
// On a terminal: one block of nested phase bars, redrawn in place with ANSI escape codes (cursor up,
// erase line), at most ten times a second, on stderr so the program's own output stays its own. The
// block is a title and one line per running phase, indented by depth (builds of several threads
// share the one block: `Channel` draws it); when a build ends its part gives way to one line saying
// how it ended. Not a terminal (a pipe, a log file): one plain line per phase as it starts, and the
// outcome; no escape codes. Runs on the sender thread only, never on TensorRT's.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "feed.h"

namespace trt_tui {
namespace detail {

class Bars {
public:
    Bars(bool terminal, std::string title) : terminal_(terminal), title_(std::move(title)) {}

    // Folds events in; returns the plain lines they make when not on a terminal.
    std::string apply(std::vector<Event> const& events) {
        std::string plain;
        for (Event const& e : events) {
            if (e.kind == Event::kPhaseStart) {
                if (static_cast<std::size_t>(e.phase) >= phases_.size()) phases_.resize(e.phase + 1);
                Phase& p = phases_[e.phase];
                p.name = e.name;
                p.depth = e.parent >= 0 && static_cast<std::size_t>(e.parent) < phases_.size()
                              ? phases_[e.parent].depth + 1
                              : 0;
                p.steps = e.number;
                p.started = e.t;
                p.running = true;
                if (!terminal_)
                    plain += "trt-tui: " + std::string(2 * p.depth, ' ') + p.name + " (" + std::to_string(p.steps) +
                             (p.steps == 1 ? " step)\n" : " steps)\n");
            } else if (e.kind == Event::kStep) {
                if (static_cast<std::size_t>(e.phase) < phases_.size()) phases_[e.phase].done = e.number + 1;
            } else if (e.kind == Event::kPhaseFinish) {
                if (static_cast<std::size_t>(e.phase) < phases_.size()) phases_[e.phase].running = false;
            } else if (e.kind == Event::kState && e.name != "building") {
                outcome_ = outcome_line(e);
            }
            if (e.t > now_) now_ = e.t;
        }
        return plain;
    }

    // The build's lines of the block (a title, then one per running phase), `t` seconds into it.
    std::string block(double t, int& lines) {
        if (t > now_) now_ = t;
        char head[200];
        std::snprintf(head, sizeof(head), "\x1b[1mtrt-tui\x1b[0m %s  %.1fs\n", title_.c_str(), now_);
        std::string out = head;
        ++lines;
        for (Phase const& p : phases_) {
            if (!p.running) continue;
            out += bar_line(p);
            ++lines;
        }
        return out;
    }

    // How the build ended, as one line.
    std::string outcome() const { return outcome_.empty() ? "trt-tui: " + title_ + ": ended\n" : outcome_; }

private:
    struct Phase {
        std::string name;
        int depth = 0;
        int steps = 0;
        int done = 0;
        double started = 0.0;
        bool running = false;
    };

    std::string bar_line(Phase const& p) const {
        constexpr int width = 24;
        double fraction = p.steps > 0 ? static_cast<double>(p.done) / p.steps : 0.0;
        if (fraction > 1.0) fraction = 1.0;
        int filled = static_cast<int>(fraction * width + 0.5);
        std::string name = std::string(2 * p.depth, ' ') + p.name;
        if (name.size() > 40) name = name.substr(0, 39) + "~";
        std::string bar = "\x1b[32m";
        for (int i = 0; i < width; ++i) {
            if (i == filled) bar += "\x1b[2m";
            bar += i < filled ? "\xe2\x96\x88" : "\xe2\x96\x91";  // full block, light shade
        }
        bar += "\x1b[0m";
        char tail[96];
        std::snprintf(tail, sizeof(tail), " %5d/%-5d %6.1fs\n", p.done, p.steps, now_ - p.started);
        name.resize(41, ' ');
        return name + bar + tail;
    }

    std::string outcome_line(Event const& e) const {
        char seconds[32];
        std::snprintf(seconds, sizeof(seconds), "%.1f s", e.t);
        // "succeeded, engine 6.6 MB", "cancelled in A > B", "failed (build failed: ...)"
        std::string line = "trt-tui: " + title_ + ": ";
        line += e.text.compare(0, e.name.size(), e.name) == 0 ? e.text : e.name;
        if (e.engine_bytes >= 0) {
            char size[48];
            std::snprintf(size, sizeof(size), ", engine %.1f MB", static_cast<double>(e.engine_bytes) / 1e6);
            line += size;
        }
        if (!e.text.empty() && e.text.compare(0, e.name.size(), e.name) != 0) line += " (" + e.text + ")";
        return line + " after " + seconds + "\n";
    }

    bool terminal_;
    std::string title_;
    std::vector<Phase> phases_;
    std::string outcome_;
    double now_ = 0.0;
};

}  // namespace detail
}  // namespace trt_tui
