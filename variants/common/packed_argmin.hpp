#pragma once
// The MultiK kernels pack a centroid's index into the low mantissa bits of its distance, so
// one FMNMX tracks value and index together. These are the host-side numbers of that trick.

namespace mk {

// Mantissa bits that hold indices 0..kmax-1.
inline int packed_index_bits(int kmax) {
  int bits = 1;
  while ((1 << bits) < kmax) ++bits;
  return bits;
}

// The mask that keeps a distance's bits above the packed index.
inline unsigned packed_keep_mask(int kmax) { return ~((1u << packed_index_bits(kmax)) - 1u); }

}  // namespace mk
