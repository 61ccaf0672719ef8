// FlatIndexMap: an open-addressing hash map from a pair of 64-bit words to a 32-bit index, for
// the interning tables the profile builder and the report probe once per sample. Lookups never
// allocate; the table grows (doubling) only when an insert would fill it past 3/4.
#pragma once

#include <cstdint>
#include <vector>

namespace perfscope::detail {

class FlatIndexMap {
 public:
  static constexpr std::uint32_t absent = 0xffffffffu;

  explicit FlatIndexMap(std::size_t capacity = 1024) { rehash(round_up(capacity)); }

  // The index stored for the key, or `absent`.
  std::uint32_t find(std::uint64_t a, std::uint64_t b) const noexcept {
    for (std::size_t slot = hash(a, b) & mask_;; slot = (slot + 1) & mask_) {
      const Slot& s = slots_[slot];
      if (s.value == absent) return absent;
      if (s.a == a && s.b == b) return s.value;
    }
  }

  // The index stored for the key; when there is none, stores `value` and returns it.
  std::uint32_t insert(std::uint64_t a, std::uint64_t b, std::uint32_t value) {
    if ((size_ + 1) * 4 > slots_.size() * 3) rehash(slots_.size() * 2);
    for (std::size_t slot = hash(a, b) & mask_;; slot = (slot + 1) & mask_) {
      Slot& s = slots_[slot];
      if (s.value == absent) {
        s = Slot{a, b, value};
        ++size_;
        return value;
      }
      if (s.a == a && s.b == b) return s.value;
    }
  }

  std::size_t size() const noexcept { return size_; }

 private:
  struct Slot {
    std::uint64_t a = 0, b = 0;
    std::uint32_t value = absent;
  };

  static std::size_t round_up(std::size_t n) {
    std::size_t size = 16;
    while (size < n) size *= 2;
    return size;
  }
  // Keys are addresses and small indexes: mixed so that neighbouring values spread out.
  static std::size_t hash(std::uint64_t a, std::uint64_t b) noexcept {
    std::uint64_t h =
        a * 0x9e3779b97f4a7c15ULL ^ (b + 0x632be59bd9b4e019ULL) * 0xc2b2ae3d27d4eb4fULL;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 32;
    return static_cast<std::size_t>(h);
  }

  void rehash(std::size_t capacity) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.value != absent) insert(s.a, s.b, s.value);
    }
  }

  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
  std::size_t size_ = 0;
};

}  // namespace perfscope::detail
