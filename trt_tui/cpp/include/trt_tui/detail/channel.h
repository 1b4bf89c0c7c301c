// trt-tui: the process's one connection to trt-tui, and its one sender thread.
//
// `prepare()` runs on the program's thread (a Monitor's constructor, the end of a build): it
// connects, where a trt-tui listens (`trt-tui run`'s socket, else the app's collector, asked again
// at each build: an app may start meanwhile), and says hello. `open()` runs on TensorRT's thread at
// a build's first callback: constant work, no I/O; the build is reported if the connection is up,
// else drawn by the standalone bars. The sender thread wakes every `kBatchSeconds` while builds are
// open: it reads trt-tui's cancels, announces new builds, sends their events as JSON lines, or
// draws the standalone block. `close()` (the program's thread, once the build returned) delivers a
// build's last events before the program goes on, so a program that exits at once reported all.
//
// Messages follow `trt-tui run`'s reporter: `("hello", pid, {"v": 1, "program": NAME, "sampled":
// false})`, `("build", local, name or None, backend, t0, version)`, `("json", [LINE, ...])`; from
// trt-tui only `("cancel", local)`. A fork's child starts with no connection (`pthread_atfork`).
#pragma once

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <unistd.h>

#include "bars.h"
#include "feed.h"
#include "wire.h"

namespace trt_tui {
namespace detail {

class Channel {
public:
    static constexpr double kBatchSeconds = 0.05;

    // Never destroyed: its thread may still run while static objects are torn down at exit.
    static Channel& instance() {
        static Channel* channel = new Channel();
        return *channel;
    }

    // false: a build nobody observes is not drawn either (the preload: the program's stderr is its own).
    void set_standalone(bool draw) {
        std::lock_guard<std::mutex> lock(mutex_);
        standalone_ = draw;
    }

    void set_backend(std::string backend, std::string version) {
        std::lock_guard<std::mutex> lock(mutex_);
        backend_ = std::move(backend);
        version_ = std::move(version);
    }

    // Connect where a trt-tui listens (the program's thread). Quiet: without trt-tui, nothing changes.
    void prepare() noexcept {
        try {
            std::lock_guard<std::mutex> send(send_);
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (fd_ >= 0 && !broken_) return;
                if (fd_ >= 0 && !collector_) return;  // `trt-tui run` went away: the builds go on unobserved
            }
            Target target;
            if (!find_target(target)) return;
            int fd = connect_unix(target.address);
            if (fd < 0) return;
            Pickle hello;
            hello.mark().str("hello").integer(::getpid()).empty_dict().mark();
            hello.str("v").integer(1).str("program").str(program_name()).str("sampled").boolean(false);
            hello.setitems().tuple();
            if (!handshake(fd, target.key) || !send_frame(fd, hello.done())) {
                ::close(fd);
                return;
            }
            std::lock_guard<std::mutex> lock(mutex_);
            if (fd_ >= 0) ::close(fd_);
            fd_ = fd;
            broken_ = false;
            collector_ = target.collector;
        } catch (...) {
        }
    }

    // A build starts (TensorRT's thread): its feed, reported if a trt-tui listens, else drawn here.
    std::shared_ptr<Feed> open(std::string const& name) {
        std::lock_guard<std::mutex> lock(mutex_);
        bool reported = fd_ >= 0 && !broken_;
        auto feed = std::make_shared<Feed>(next_local_++, monotonic_now(), name, reported);
        feeds_.push_back(feed);
        if (!started_) {
            started_ = true;
            std::thread(&Channel::run, this).detach();
        }
        wake_.notify_one();
        return feed;
    }

    std::string backend() {
        std::lock_guard<std::mutex> lock(mutex_);
        return backend_;
    }

    // The build returned (the program's thread): deliver what it left, its final state among it.
    void close(std::shared_ptr<Feed> const& feed) noexcept {
        try {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                feeds_.erase(std::remove(feeds_.begin(), feeds_.end(), feed), feeds_.end());
            }
            std::lock_guard<std::mutex> send(send_);
            deliver(*feed, feed->drain(), true);
            redraw(true);
        } catch (...) {
        }
    }

private:
    Channel() {
        pthread_atfork([] { instance().before_fork(); }, [] { instance().after_fork(false); },
                       [] { instance().after_fork(true); });
    }

    void before_fork() {
        send_.lock();
        mutex_.lock();
    }

    void after_fork(bool child) {
        if (child) {  // only the forking thread lives on: no sender, and the parent's connection is not ours
            if (fd_ >= 0) ::close(fd_);
            fd_ = -1;
            broken_ = false;
            started_ = false;
            feeds_.clear();
            shown_.clear();
            drawn_ = 0;
        }
        mutex_.unlock();
        send_.unlock();
    }

    static std::string program_name() {
#ifdef __GLIBC__
        return program_invocation_short_name;
#else
        return "program";
#endif
    }

    void run() {
        for (;;) {
            std::vector<std::shared_ptr<Feed>> feeds;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                wake_.wait_for(lock, std::chrono::duration<double>(kBatchSeconds));
                while (feeds_.empty()) wake_.wait(lock);  // a closed build's last lines were drawn by `close`
                feeds = feeds_;
            }
            std::lock_guard<std::mutex> send(send_);
            read_cancels(feeds);
            for (auto const& feed : feeds) deliver(*feed, feed->drain(), false);
            redraw(false);
        }
    }

    // Under `send_`.
    void read_cancels(std::vector<std::shared_ptr<Feed>> const& feeds) {
        int fd;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (fd_ < 0 || broken_) return;
            fd = fd_;
        }
        for (;;) {
            pollfd p{fd, POLLIN, 0};
            if (::poll(&p, 1, 0) <= 0) return;
            std::string frame;
            if (!recv_frame(fd, frame, 1000, 1 << 16)) {
                lost();
                return;
            }
            long long local = read_cancel(frame);
            for (auto const& feed : feeds)
                if (feed->local == local) feed->cancel_requested.store(true);
        }
    }

    void lost() {
        std::lock_guard<std::mutex> lock(mutex_);
        broken_ = true;
    }

    // Under `send_`.
    void deliver(Feed& feed, std::vector<Event> events, bool last) {
        if (feed.closed) return;
        feed.closed = last;
        if (!feed.reported) {
            {
                std::lock_guard<std::mutex> lock(mutex_);
                if (!standalone_) return;
            }
            auto it = std::find_if(shown_.begin(), shown_.end(), [&](Shown const& s) { return s.feed == &feed; });
            if (it == shown_.end()) {
                shown_.push_back(Shown{&feed, Bars(terminal_, feed.name.empty() ? program_name() : feed.name),
                                       feed.t0, false});
                it = shown_.end() - 1;
            }
            std::string plain = it->bars.apply(events);
            if (!plain.empty()) write_err(plain);
            it->ended = last;
            return;
        }
        int fd;
        std::string backend, version;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (fd_ < 0 || broken_) return;
            fd = fd_;
            backend = backend_;
            version = version_;
        }
        bool sent = true;
        if (!feed.announced) {
            Pickle build;
            build.mark().str("build").integer(feed.local);
            if (feed.name.empty()) build.none();
            else build.str(feed.name);
            build.str(backend).real(feed.t0).str(version).tuple();
            sent = send_frame(fd, build.done());
            feed.announced = true;
        }
        if (sent && !events.empty()) {
            Pickle batch;
            batch.mark().str("json").empty_list().mark();
            for (Event const& e : events) batch.str(to_json(e, feed.local));
            batch.appends().tuple();
            sent = send_frame(fd, batch.done());
        }
        if (!sent) lost();
    }

    // The standalone block, redrawn (a terminal), and the outcome of each build that ended. Under `send_`.
    void redraw(bool now) {
        if (shown_.empty()) return;
        double t = monotonic_now();
        bool ended = std::any_of(shown_.begin(), shown_.end(), [](Shown const& s) { return s.ended; });
        if (!ended && (!terminal_ || (!now && t - last_draw_ < 0.1))) return;
        last_draw_ = t;
        std::string out;
        if (terminal_ && drawn_ > 0) out += "\x1b[" + std::to_string(drawn_) + "F\x1b[J";
        int lines = 0;
        for (Shown const& s : shown_)
            if (s.ended) out += s.bars.outcome();
        shown_.erase(std::remove_if(shown_.begin(), shown_.end(), [](Shown const& s) { return s.ended; }),
                     shown_.end());
        if (terminal_)
            for (Shown& s : shown_) out += s.bars.block(t - s.t0, lines);
        drawn_ = lines;
        write_err(out);
    }

    static void write_err(std::string const& text) {
        std::size_t at = 0;
        while (at < text.size()) {
            ssize_t n = ::write(2, text.data() + at, text.size() - at);
            if (n <= 0) return;  // a closed terminal: the builds go on, undrawn
            at += static_cast<std::size_t>(n);
        }
    }

    struct Shown {
        Feed const* feed;
        Bars bars;
        double t0;
        bool ended;
    };

    std::mutex mutex_;  // the fields below except the sender's; never held during I/O
    std::condition_variable wake_;
    std::vector<std::shared_ptr<Feed>> feeds_;
    long long next_local_ = 1;
    int fd_ = -1;
    bool broken_ = false;
    bool collector_ = false;
    bool started_ = false;
    bool standalone_ = true;
    std::string backend_ = "tensorrt";
    std::string version_;

    std::mutex send_;  // the sender's: the socket's writes and the standalone display
    std::vector<Shown> shown_;
    bool const terminal_ = ::isatty(2) == 1 && std::getenv("TERM") != nullptr &&
                           std::string(std::getenv("TERM")) != "dumb";
    int drawn_ = 0;
    double last_draw_ = 0.0;
};

}  // namespace detail
}  // namespace trt_tui
