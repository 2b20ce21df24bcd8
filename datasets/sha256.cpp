#include "datasets/sha256.hpp"

#include <algorithm>
#include <cstring>

#include "datasets/dataset.hpp"

namespace mk {
namespace {

using u128 = unsigned __int128;

// FIPS 180-4 defines the constants as the leading 32 bits of the fractional parts of square
// and cube roots of the first primes. Deriving them with exact integer roots avoids a
// 64-entry literal table where a single typo would go unnoticed until a digest mismatched.
uint64_t integer_root(u128 value, int degree) {
  uint64_t low = 0, high = uint64_t(1) << (degree == 2 ? 40 : 36);
  while (low < high) {  // largest x with x^degree <= value
    uint64_t mid = low + (high - low + 1) / 2;
    u128 power = u128(mid) * mid;
    if (degree == 3) power *= mid;
    if (power <= value) low = mid; else high = mid - 1;
  }
  return low;
}

uint32_t fractional_root_bits(uint32_t prime, int degree) {
  // floor(frac(prime^(1/degree)) * 2^32) = floor(root(prime * 2^(32*degree))) mod 2^32
  u128 scaled = u128(prime) << (32 * degree);
  return static_cast<uint32_t>(integer_root(scaled, degree));
}

struct Constants {
  uint32_t initial_state[8];
  uint32_t round[64];
  Constants() {
    int found = 0;
    for (uint32_t candidate = 2; found < 64; ++candidate) {
      bool prime = true;
      for (uint32_t divisor = 2; divisor * divisor <= candidate; ++divisor)
        if (candidate % divisor == 0) { prime = false; break; }
      if (!prime) continue;
      if (found < 8) initial_state[found] = fractional_root_bits(candidate, 2);
      round[found] = fractional_root_bits(candidate, 3);
      ++found;
    }
  }
};

const Constants& constants() {
  static const Constants table;
  return table;
}

inline uint32_t rotate_right(uint32_t x, int bits) { return (x >> bits) | (x << (32 - bits)); }

}  // namespace

Sha256::Sha256() { std::memcpy(state_, constants().initial_state, sizeof(state_)); }

void Sha256::compress(const uint8_t* block) {
  const uint32_t* k = constants().round;
  uint32_t schedule[64];
  for (int t = 0; t < 16; ++t)
    schedule[t] = uint32_t(block[4 * t]) << 24 | uint32_t(block[4 * t + 1]) << 16 |
                  uint32_t(block[4 * t + 2]) << 8 | uint32_t(block[4 * t + 3]);
  for (int t = 16; t < 64; ++t) {
    uint32_t w15 = schedule[t - 15], w2 = schedule[t - 2];
    uint32_t sigma0 = rotate_right(w15, 7) ^ rotate_right(w15, 18) ^ (w15 >> 3);
    uint32_t sigma1 = rotate_right(w2, 17) ^ rotate_right(w2, 19) ^ (w2 >> 10);
    schedule[t] = sigma1 + schedule[t - 7] + sigma0 + schedule[t - 16];
  }
  uint32_t a = state_[0], b = state_[1], c = state_[2], d = state_[3];
  uint32_t e = state_[4], f = state_[5], g = state_[6], h = state_[7];
  for (int t = 0; t < 64; ++t) {
    uint32_t big_sigma1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
    uint32_t choose = (e & f) ^ (~e & g);
    uint32_t temp1 = h + big_sigma1 + choose + k[t] + schedule[t];
    uint32_t big_sigma0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
    uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
    uint32_t temp2 = big_sigma0 + majority;
    h = g; g = f; f = e; e = d + temp1;
    d = c; c = b; b = a; a = temp1 + temp2;
  }
  state_[0] += a; state_[1] += b; state_[2] += c; state_[3] += d;
  state_[4] += e; state_[5] += f; state_[6] += g; state_[7] += h;
}

void Sha256::update(const void* data, size_t bytes) {
  const uint8_t* input = static_cast<const uint8_t*>(data);
  total_bytes_ += bytes;
  if (pending_bytes_ > 0) {
    size_t take = std::min(bytes, sizeof(pending_) - pending_bytes_);
    std::memcpy(pending_ + pending_bytes_, input, take);
    pending_bytes_ += take; input += take; bytes -= take;
    if (pending_bytes_ < sizeof(pending_)) return;
    compress(pending_);
    pending_bytes_ = 0;
  }
  for (; bytes >= 64; input += 64, bytes -= 64) compress(input);
  std::memcpy(pending_, input, bytes);
  pending_bytes_ = bytes;
}

std::string Sha256::hex_digest() {
  uint64_t message_bits = total_bytes_ * 8;
  uint8_t padding[72] = {0x80};
  // Pad with 0x80 then zeros to 56 bytes mod 64, then the 64-bit big-endian message length.
  size_t pad_bytes = (pending_bytes_ < 56 ? 56 : 120) - pending_bytes_;
  for (int i = 0; i < 8; ++i) padding[pad_bytes + i] = uint8_t(message_bits >> (56 - 8 * i));
  update(padding, pad_bytes + 8);
  static const char digits[] = "0123456789abcdef";
  std::string hex;
  for (uint32_t word : state_)
    for (int shift = 28; shift >= 0; shift -= 4) hex += digits[(word >> shift) & 0xf];
  return hex;
}

std::string sha256_hex(const void* data, size_t bytes) {
  Sha256 hash;
  hash.update(data, bytes);
  return hash.hex_digest();
}

}  // namespace mk
