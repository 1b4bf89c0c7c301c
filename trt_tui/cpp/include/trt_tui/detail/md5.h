// trt-tui: HMAC-MD5, the digest of the key challenge that Python's multiprocessing.connection speaks.
//
// trt-tui's report socket proves each peer knows the run's key with multiprocessing's challenge:
// HMAC-MD5 of a random message (Python 3.12+ names sha256 in its challenge and still accepts the
// legacy MD5 answer). MD5 here authenticates a short-lived local socket; it protects no data.
// Written out (RFC 1321) so the header needs no crypto library.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

namespace trt_tui {
namespace detail {

class Md5 {
public:
    Md5() noexcept { reset(); }

    void reset() noexcept {
        state_[0] = 0x67452301u;
        state_[1] = 0xefcdab89u;
        state_[2] = 0x98badcfeu;
        state_[3] = 0x10325476u;
        length_ = 0;
        used_ = 0;
    }

    void update(void const* data, std::size_t size) noexcept {
        auto const* bytes = static_cast<unsigned char const*>(data);
        length_ += size;
        while (size > 0) {
            std::size_t take = 64 - used_ < size ? 64 - used_ : size;
            std::memcpy(block_ + used_, bytes, take);
            used_ += take;
            bytes += take;
            size -= take;
            if (used_ == 64) {
                transform(block_);
                used_ = 0;
            }
        }
    }

    std::string digest() noexcept {
        std::uint64_t bits = length_ * 8;
        unsigned char pad = 0x80;
        update(&pad, 1);
        unsigned char zero = 0;
        while (used_ != 56) update(&zero, 1);
        unsigned char size[8];
        for (int i = 0; i < 8; ++i) size[i] = static_cast<unsigned char>(bits >> (8 * i));
        update(size, 8);
        std::string out(16, '\0');
        for (int i = 0; i < 4; ++i)
            for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<char>(state_[i] >> (8 * j));
        return out;
    }

private:
    static std::uint32_t rotl(std::uint32_t x, int c) noexcept { return (x << c) | (x >> (32 - c)); }

    void transform(unsigned char const* block) noexcept {
        static constexpr std::uint32_t K[64] = {
            0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
            0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
            0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
            0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
            0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
            0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
            0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
            0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};
        static constexpr int R[64] = {7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                      5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20, 5, 9,  14, 20,
                                      4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                      6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21};
        std::uint32_t m[16];
        for (int i = 0; i < 16; ++i)
            m[i] = static_cast<std::uint32_t>(block[4 * i]) | static_cast<std::uint32_t>(block[4 * i + 1]) << 8 |
                   static_cast<std::uint32_t>(block[4 * i + 2]) << 16 |
                   static_cast<std::uint32_t>(block[4 * i + 3]) << 24;
        std::uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
        for (int i = 0; i < 64; ++i) {
            std::uint32_t f;
            int g;
            if (i < 16) {
                f = (b & c) | (~b & d);
                g = i;
            } else if (i < 32) {
                f = (d & b) | (~d & c);
                g = (5 * i + 1) % 16;
            } else if (i < 48) {
                f = b ^ c ^ d;
                g = (3 * i + 5) % 16;
            } else {
                f = c ^ (b | ~d);
                g = (7 * i) % 16;
            }
            std::uint32_t next = d;
            d = c;
            c = b;
            b = b + rotl(a + f + K[i] + m[g], R[i]);
            a = next;
        }
        state_[0] += a;
        state_[1] += b;
        state_[2] += c;
        state_[3] += d;
    }

    std::uint32_t state_[4];
    std::uint64_t length_;
    unsigned char block_[64];
    std::size_t used_;
};

// HMAC (RFC 2104) with MD5: what `hmac.new(key, message, "md5").digest()` gives.
inline std::string hmac_md5(std::string const& key, std::string const& message) noexcept {
    std::string k = key;
    if (k.size() > 64) {
        Md5 h;
        h.update(k.data(), k.size());
        k = h.digest();
    }
    k.resize(64, '\0');
    std::string inner(64, '\0'), outer(64, '\0');
    for (int i = 0; i < 64; ++i) {
        inner[i] = static_cast<char>(k[i] ^ 0x36);
        outer[i] = static_cast<char>(k[i] ^ 0x5c);
    }
    Md5 h;
    h.update(inner.data(), inner.size());
    h.update(message.data(), message.size());
    std::string first = h.digest();
    Md5 o;
    o.update(outer.data(), outer.size());
    o.update(first.data(), first.size());
    return o.digest();
}

}  // namespace detail
}  // namespace trt_tui
