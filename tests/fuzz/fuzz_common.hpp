#pragma once
// What every fuzz target asserts: a reader given any bytes either succeeds or throws
// mk::InputError (exit 2 with a message). Any other exception escapes to libFuzzer, which
// reports it like a crash; AddressSanitizer and UndefinedBehaviorSanitizer catch the rest.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/errors.hpp"

namespace mk::fuzz {

template <typename Action>
void expect_clean(Action action) {
  try {
    action();
  } catch (const mk::InputError&) {
  }
}

inline std::string_view bytes_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

}  // namespace mk::fuzz
