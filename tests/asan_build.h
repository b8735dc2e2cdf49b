// DYNAMIX tests — DYNAMIX_ASAN is defined when this translation unit is built with
// AddressSanitizer (GCC's __SANITIZE_ADDRESS__ or clang's __has_feature), whose malloc and leak
// checker replace glibc's.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define DYNAMIX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DYNAMIX_ASAN 1
#endif
#endif
