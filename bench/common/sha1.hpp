#pragma once
// SHA-1 (FIPS 180-1) for the UTS benchmark's splittable random numbers:
// UTS names each tree node by a 20-byte digest, and a child's digest is
// SHA-1(parent digest || child index as 4 big-endian bytes). Only messages
// of 20 and 24 bytes are hashed, so one padded block always suffices, and the
// digest is kept as its five big-endian words (g++ 12 vectorizes a byte-built block
// and an up-front schedule badly, at twice the cost of this form).

#include <array>
#include <cstdint>

namespace bench {

// The digest's five 32-bit words; byte i of the digest is byte i%4 (from the
// top) of word i/4.
using sha1_digest = std::array<std::uint32_t, 5>;

namespace sha1_detail {

constexpr std::uint32_t rotl(std::uint32_t x, int s) {
  return (x << s) | (x >> (32 - s));
}

// The digest of a message of `count` (< 14) big-endian words.
inline sha1_digest one_block(const std::uint32_t* words, int count) {
  // The message schedule in a 16-word ring, extended as the rounds need it
  // (an 80-word array expanded up front is what g++ vectorized badly).
  std::uint32_t w[16] = {};
  for (int i = 0; i < count; ++i) {
    w[i] = words[i];
  }
  w[count] = 0x80000000u;                          // the padding's first bit
  w[15] = static_cast<std::uint32_t>(count) * 32;  // the message length in bits
  const auto schedule = [&w](int i) {
    if (i >= 16) {
      w[i & 15] = rotl(w[(i - 3) & 15] ^ w[(i - 8) & 15] ^ w[(i - 14) & 15] ^ w[i & 15], 1);
    }
    return w[i & 15];
  };
  sha1_digest h = {0x67452301u, 0xEFCDAB89u, 0x98BADCFEu, 0x10325476u, 0xC3D2E1F0u};
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];
  // The four 20-round phases as separate loops: no per-round branch.
  const auto round = [&](std::uint32_t f, std::uint32_t k, std::uint32_t wi) {
    const std::uint32_t t = rotl(a, 5) + f + e + k + wi;
    e = d;
    d = c;
    c = rotl(b, 30);
    b = a;
    a = t;
  };
  for (int i = 0; i < 20; ++i) {
    round((b & c) | (~b & d), 0x5A827999u, schedule(i));
  }
  for (int i = 20; i < 40; ++i) {
    round(b ^ c ^ d, 0x6ED9EBA1u, schedule(i));
  }
  for (int i = 40; i < 60; ++i) {
    round((b & c) | (b & d) | (c & d), 0x8F1BBCDCu, schedule(i));
  }
  for (int i = 60; i < 80; ++i) {
    round(b ^ c ^ d, 0xCA62C1D6u, schedule(i));
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  return h;
}

}  // namespace sha1_detail

// UTS's rng_init: the digest of 16 zero bytes followed by the seed.
inline sha1_digest uts_root_state(std::uint32_t seed) {
  const std::uint32_t msg[5] = {0, 0, 0, 0, seed};
  return sha1_detail::one_block(msg, 5);
}

// UTS's rng_spawn: the parent's digest followed by the child's index.
inline sha1_digest uts_child_state(const sha1_digest& parent, std::uint32_t index) {
  const std::uint32_t msg[6] = {parent[0], parent[1], parent[2], parent[3], parent[4], index};
  return sha1_detail::one_block(msg, 6);
}

// UTS's rng_rand scaled to [0, 1): the digest's last four bytes, top bit cleared.
inline double uts_probability(const sha1_digest& s) {
  return static_cast<double>(s[4] & 0x7fffffffu) / 2147483648.0;
}

}  // namespace bench
