// trt-tui: the report socket as a C++ program speaks it.
//
// trt-tui's report socket (`trt-tui run`'s, or the app's collector) is a Unix socket carrying
// Python's multiprocessing.connection frames: a 4-byte big-endian length, then a pickle. A peer
// first proves it knows the key (HMAC challenge, both ways). A C++ program sends only simple
// values (tuples of strings, numbers, a dict, a list of strings), so it writes pickle's protocol 2
// opcodes for those and reads back only trt-tui's one message, `("cancel", N)`. The events travel
// as the versioned JSON lines of `events-v1.json`, inside a `("json", [LINE, ...])` message.
//
// Where the socket is: `TRT_TUI_RUN_ADDRESS` and `TRT_TUI_RUN_KEY` (hex) under `trt-tui run`, else
// the collector's socket of this user (`$XDG_RUNTIME_DIR/trt-tui`, else `$TMPDIR/trt-tui-UID`, with
// the same checks as trt-tui's own: a directory, socket and key of this user's alone).
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "md5.h"

namespace trt_tui {
namespace detail {

inline bool write_all(int fd, char const* data, std::size_t size) noexcept {
    while (size > 0) {
        ssize_t n = ::send(fd, data, size, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

// Reads exactly `size` bytes, waiting at most `timeout_ms` for each piece (-1: no limit).
inline bool read_exact(int fd, char* data, std::size_t size, int timeout_ms) noexcept {
    while (size > 0) {
        pollfd p{fd, POLLIN, 0};
        int ready = ::poll(&p, 1, timeout_ms);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) return false;
        ssize_t n = ::recv(fd, data, size, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data += n;
        size -= static_cast<std::size_t>(n);
    }
    return true;
}

inline bool send_frame(int fd, std::string const& payload) noexcept {
    std::uint32_t n = static_cast<std::uint32_t>(payload.size());
    char head[4] = {static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                    static_cast<char>(n)};
    return write_all(fd, head, 4) && write_all(fd, payload.data(), payload.size());
}

inline bool recv_frame(int fd, std::string& out, int timeout_ms, std::size_t limit) noexcept {
    unsigned char head[4];
    if (!read_exact(fd, reinterpret_cast<char*>(head), 4, timeout_ms)) return false;
    std::uint32_t n = static_cast<std::uint32_t>(head[0]) << 24 | static_cast<std::uint32_t>(head[1]) << 16 |
                      static_cast<std::uint32_t>(head[2]) << 8 | head[3];
    if (n > limit) return false;
    try {
        out.assign(n, '\0');
    } catch (...) {
        return false;
    }
    return read_exact(fd, &out[0], n, timeout_ms);
}

// Pickle protocol 2, the few opcodes of the messages a program sends.
class Pickle {
public:
    Pickle() { out_ += "\x80\x02"; }
    Pickle& mark() { out_ += '('; return *this; }
    Pickle& tuple() { out_ += 't'; return *this; }
    Pickle& none() { out_ += 'N'; return *this; }
    Pickle& boolean(bool b) { out_ += b ? '\x88' : '\x89'; return *this; }
    Pickle& str(std::string const& text) {  // ASCII only (the callers' text is JSON, kept ASCII)
        std::string s = text;
        for (char& c : s)
            if (static_cast<unsigned char>(c) >= 0x80) c = '?';
        out_ += 'X';
        put_le(static_cast<std::uint32_t>(s.size()), 4);
        out_ += s;
        return *this;
    }
    Pickle& integer(long long v) {
        if (v >= INT32_MIN && v <= INT32_MAX) {
            out_ += 'J';
            put_le(static_cast<std::uint32_t>(static_cast<std::int32_t>(v)), 4);
        } else {  // LONG1: 8 bytes, two's complement, little-endian
            out_ += '\x8a';
            out_ += '\x08';
            put_le(static_cast<std::uint64_t>(v), 8);
        }
        return *this;
    }
    Pickle& real(double v) {
        std::uint64_t bits;
        std::memcpy(&bits, &v, 8);
        out_ += 'G';
        for (int i = 7; i >= 0; --i) out_ += static_cast<char>(bits >> (8 * i));
        return *this;
    }
    Pickle& empty_dict() { out_ += '}'; return *this; }
    Pickle& setitems() { out_ += 'u'; return *this; }
    Pickle& empty_list() { out_ += ']'; return *this; }
    Pickle& appends() { out_ += 'e'; return *this; }
    std::string done() { return out_ + '.'; }

private:
    void put_le(std::uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i) out_ += static_cast<char>(v >> (8 * i));
    }
    std::string out_;
};

// The build id of a pickled `("cancel", N)`, or -1 for any other message. Reads the opcodes Python
// writes for such a tuple (protocols 2 to 5); anything else is not a cancel.
inline long long read_cancel(std::string const& p) noexcept {
    std::size_t i = 0;
    std::string word;
    long long number = -1;
    auto le = [&](std::size_t at, int n) {
        std::uint64_t v = 0;
        for (int k = n - 1; k >= 0; --k) v = v << 8 | static_cast<unsigned char>(p[at + k]);
        return v;
    };
    while (i < p.size()) {
        unsigned char op = static_cast<unsigned char>(p[i++]);
        switch (op) {
            case 0x80: i += 1; break;                 // PROTO
            case 0x95: i += 8; break;                 // FRAME
            case 0x94: case '(': case 0x85: case 0x86: case 0x87: case 't': break;  // MEMOIZE, MARK, TUPLEs
            case 'q': i += 1; break;                  // BINPUT
            case 0x8c:                                // SHORT_BINUNICODE
                if (i >= p.size()) return -1;
                word.assign(p, i + 1, static_cast<unsigned char>(p[i]));
                i += 1 + static_cast<unsigned char>(p[i]);
                break;
            case 'X':                                 // BINUNICODE
                if (i + 4 > p.size()) return -1;
                word.assign(p, i + 4, le(i, 4));
                i += 4 + le(i, 4);
                break;
            case 'K': if (i + 1 > p.size()) return -1; number = static_cast<long long>(le(i, 1)); i += 1; break;
            case 'M': if (i + 2 > p.size()) return -1; number = static_cast<long long>(le(i, 2)); i += 2; break;
            case 'J':
                if (i + 4 > p.size()) return -1;
                number = static_cast<std::int32_t>(le(i, 4));
                i += 4;
                break;
            case '.': return word == "cancel" ? number : -1;
            default: return -1;
        }
    }
    return -1;
}

// multiprocessing's mutual challenge, the client's half: answer trt-tui's, then challenge it.
inline bool handshake(int fd, std::string const& key) noexcept {
    static char const challenge[] = "#CHALLENGE#";
    static char const welcome[] = "#WELCOME#";
    std::string frame;
    if (!recv_frame(fd, frame, 10000, 256) || frame.compare(0, 11, challenge) != 0) return false;
    if (!send_frame(fd, hmac_md5(key, frame.substr(11)))) return false;
    if (!recv_frame(fd, frame, 10000, 256) || frame != welcome) return false;
    std::string message(20, '\0');
    int urandom = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    bool random = urandom >= 0 && ::read(urandom, &message[0], 20) == 20;
    if (urandom >= 0) ::close(urandom);
    if (!random) return false;
    if (!send_frame(fd, std::string(challenge) + message)) return false;
    if (!recv_frame(fd, frame, 10000, 256)) return false;
    std::string expected = hmac_md5(key, message);
    bool good = frame == expected || frame == "{md5}" + expected;
    send_frame(fd, good ? welcome : "#FAILURE#");
    return good;
}

inline int connect_unix(std::string const& path) noexcept {
    sockaddr_un address{};
    if (path.size() >= sizeof(address.sun_path)) return -1;
    address.sun_family = AF_UNIX;
    std::memcpy(address.sun_path, path.data(), path.size());
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// Whether `path` is a `kind` (S_IFDIR, S_IFSOCK, S_IFREG) of this user's with no permission outside `mode`.
inline bool owned(std::string const& path, unsigned kind, unsigned mode) noexcept {
    struct stat info;
    if (::lstat(path.c_str(), &info) != 0) return false;
    return (info.st_mode & S_IFMT) == kind && info.st_uid == ::getuid() && (info.st_mode & 07777 & ~mode) == 0;
}

struct Target {
    std::string address;
    std::string key;
    bool collector = false;  // the app's collector, not `trt-tui run`
};

// Where this process reports, if anywhere: `trt-tui run`'s socket, else a listening app's.
inline bool find_target(Target& target) {
    char const* address = std::getenv("TRT_TUI_RUN_ADDRESS");
    if (address != nullptr && *address != '\0') {
        std::string hex = std::getenv("TRT_TUI_RUN_KEY") ? std::getenv("TRT_TUI_RUN_KEY") : "";
        if (hex.size() % 2 != 0) return false;
        std::string key;
        for (std::size_t i = 0; i < hex.size(); i += 2) {
            char* end = nullptr;
            std::string pair = hex.substr(i, 2);
            long byte = std::strtol(pair.c_str(), &end, 16);
            if (end != pair.c_str() + 2) return false;
            key += static_cast<char>(byte);
        }
        target = Target{address, key, false};
        return true;
    }
    std::string folder;
    char const* runtime = std::getenv("XDG_RUNTIME_DIR");
    if (runtime != nullptr && runtime[0] == '/') {
        folder = std::string(runtime) + "/trt-tui";
    } else {
        char const* tmp = std::getenv("TMPDIR");
        folder = std::string(tmp != nullptr && tmp[0] == '/' ? tmp : "/tmp") + "/trt-tui-" + std::to_string(::getuid());
    }
    std::string socket_path = folder + "/collector.sock", key_path = folder + "/collector.key";
    if (!owned(folder, S_IFDIR, 0700) || !owned(socket_path, S_IFSOCK, 0600) || !owned(key_path, S_IFREG, 0600))
        return false;
    std::FILE* file = std::fopen(key_path.c_str(), "rb");
    if (file == nullptr) return false;
    char key[64];
    std::size_t n = std::fread(key, 1, sizeof(key), file);
    std::fclose(file);
    if (n == 0) return false;
    target = Target{socket_path, std::string(key, n), true};
    return true;
}

}  // namespace detail
}  // namespace trt_tui
