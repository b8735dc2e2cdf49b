// DYNAMIX — the watchdog's wire format, shared by its set-up (watchdog_setup.cc) and its thread
// (watchdog.cc). Private to the watchdog.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "framework/comm/watchdog.h"

namespace dynamix {

constexpr uint32_t kWatchdogMagic = 0x44585744;  // "DXWD"
enum WatchdogMessageType : uint32_t { kHello = 1, kHeartbeat = 2, kBye = 3, kAbort = 4 };

// Bytes of the per-job token: rank 0 draws it, MPI carries it to the ranks, and each one sends it
// first on its connection, so that no other process can pose as a rank.
constexpr size_t kJobTokenBytes = 32;

// Fixed-size record; ranks of one job run the same binary on the same architecture.
struct Watchdog::Message {
  uint32_t magic = kWatchdogMagic;
  uint32_t type = 0;
  int32_t rank = -1;
  int32_t subject = -1;         // kAbort: the lost rank (-1: none in particular)
  uint64_t entered = 0;         // collectives this rank has entered
  double in_collective_s = -1;  // time inside the current collective; < 0 outside
  char op[16] = {};
  char text[360] = {};
};

struct Watchdog::Peer {
  int fd = -1;
  std::string inbox;
  double last_seen = 0;
  uint64_t entered = 0;
  double in_collective_s = -1;
  std::string op = "none";
  bool finished = false;  // said goodbye
  bool closed = false;
};

template <size_t N>
void copy_text(char (&dst)[N], const std::string& src) {
  std::memset(dst, 0, N);
  std::memcpy(dst, src.data(), std::min(src.size(), N - 1));
}

template <size_t N>
std::string text_of(const char (&src)[N]) {
  return std::string(src, strnlen(src, N));
}

inline std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f s", s);
  return buf;
}

}  // namespace dynamix
