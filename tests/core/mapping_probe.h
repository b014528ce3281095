// Test helpers for the allocator tests (arena, caching allocator): whether this is an ASan build
// (its allocator replaces the arena's own mappings) and whether a page is mapped.
#ifndef TREX_TESTS_CORE_MAPPING_PROBE_H_
#define TREX_TESTS_CORE_MAPPING_PROBE_H_

#include <sys/mman.h>

#include <cstdint>

namespace trex::core::test_util {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAsan = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool kAsan = true;
#else
inline constexpr bool kAsan = false;
#endif
#else
inline constexpr bool kAsan = false;
#endif

// Whether the 4 KiB page at p is mapped in this process (mincore fails with ENOMEM where not).
inline bool page_mapped(const void* p) {
  unsigned char resident;
  void* page = reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t(4095));
  return mincore(page, 4096, &resident) == 0;
}

}  // namespace trex::core::test_util

#endif  // TREX_TESTS_CORE_MAPPING_PROBE_H_
