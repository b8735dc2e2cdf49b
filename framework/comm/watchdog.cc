// DYNAMIX — the watchdog thread, its wire messages, and the watched communicator.
#include "framework/comm/watchdog.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "framework/comm/tcp_channel.h"
#include "framework/comm/watchdog_wire.h"
#include "framework/core/error.h"

namespace dynamix {

Watchdog::Watchdog(Communicator& comm, WatchdogOptions options, std::function<void()> on_abort)
    : options_(options), on_abort_(std::move(on_abort)), rank_(comm.rank()), world_(comm.size()) {
  static_assert(std::is_trivially_copyable<Message>::value, "sent as bytes");
  connect_all(comm);
  thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  stop_ = true;  // the thread says goodbye itself: one writer per socket
  if (thread_.joinable()) thread_.join();
  for (auto& p : peers_) tcp_close(p.fd);
}

void Watchdog::enter(const char* op) {
  op_.store(op);
  entered_.fetch_add(1);
  collective_start_ns_.store(std::chrono::steady_clock::now().time_since_epoch().count());
}

void Watchdog::leave() { collective_start_ns_.store(0); }

void Watchdog::set_exit_for_test(ExitFn exit) { exit_ = std::move(exit); }

std::string Watchdog::describe(int rank) const {
  if (rank < 0 || rank >= static_cast<int>(identity_.size())) return "rank " + std::to_string(rank);
  return "rank " + std::to_string(rank) + " (" + identity_[static_cast<size_t>(rank)] + ")";
}

double Watchdog::now_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Watchdog::in_collective_s(double now) const {
  const int64_t start = collective_start_ns_.load();
  if (start == 0) return -1;
  return now - std::chrono::duration<double>(std::chrono::steady_clock::duration(start)).count();
}

void Watchdog::run() {
  std::vector<pollfd> fds;
  std::vector<int> who;
  while (!stop_.load()) {
    fds.clear();
    who.clear();
    for (size_t i = 0; i < peers_.size(); ++i) {
      if (peers_[i].fd < 0 || peers_[i].closed) continue;
      fds.push_back({peers_[i].fd, POLLIN, 0});
      who.push_back(rank_ == 0 ? static_cast<int>(i) : 0);
    }
    ::poll(fds.data(), fds.size(), 200);
    for (size_t k = 0; k < fds.size(); ++k) {
      if (!fds[k].revents) continue;
      const int from = who[k];
      Peer& p = peers_[rank_ == 0 ? static_cast<size_t>(from) : 0];
      const RecvStatus status = tcp_recv_available(p.fd, &p.inbox);
      while (p.inbox.size() >= sizeof(Message)) {
        Message m;
        std::memcpy(&m, p.inbox.data(), sizeof(m));
        p.inbox.erase(0, sizeof(m));
        handle(from, m);
      }
      if (status == RecvStatus::kClosed) {
        p.closed = true;
        if (!p.finished && !tripped_.load()) {
          fail(from, "its connection closed without a goodbye: the process died or was killed");
        }
      }
    }
    const double now = now_s();
    if (now - last_sent_ >= options_.heartbeat_interval_s) {
      send_heartbeats();
      last_sent_ = now;
    }
    if (!tripped_.load()) check_peers(now);
    if (!tripped_.load() && rank_ == 0) check_collectives(now);
    if (!tripped_.load() && options_.poll_error && now - last_polled_ >= options_.heartbeat_interval_s) {
      last_polled_ = now;
      const std::string error = options_.poll_error();
      if (!error.empty()) report_local_error(error);
    }
  }
  if (!tripped_.load()) {
    Message bye;
    bye.type = kBye;
    bye.rank = rank_;
    for (auto& p : peers_) {
      if (p.fd >= 0 && !p.closed) tcp_send(p.fd, &bye, sizeof(bye));
    }
  }
}

void Watchdog::handle(int from, const Message& m) {
  Peer& p = peers_[rank_ == 0 ? static_cast<size_t>(from) : 0];
  if (m.magic != kWatchdogMagic) {
    fail(from, "it sent a malformed watchdog message");
    return;
  }
  p.last_seen = now_s();
  switch (m.type) {
    case kHeartbeat:
      p.entered = m.entered;
      p.in_collective_s = m.in_collective_s;
      p.op = text_of(m.op);
      break;
    case kBye:
      p.finished = true;
      break;
    case kAbort:
      if (rank_ == 0) {
        if (!tripped_.load())
          fail(from, "it reported a fatal error: " + text_of(m.text));  // see report_local_error
      } else if (!tripped_.exchange(true)) {
        terminate("rank 0 ends the job: " + text_of(m.text));
      }
      break;
    default:
      break;
  }
}

void Watchdog::send_heartbeats() {
  Message m;
  m.type = kHeartbeat;
  m.rank = rank_;
  m.entered = entered_.load();
  m.in_collective_s = in_collective_s(now_s());
  copy_text(m.op, op_.load());
  for (auto& p : peers_) {
    if (p.fd >= 0 && !p.closed && !p.finished) tcp_send(p.fd, &m, sizeof(m));
  }
}

void Watchdog::check_peers(double now) {
  for (size_t i = 0; i < peers_.size(); ++i) {
    const Peer& p = peers_[i];
    const int r = rank_ == 0 ? static_cast<int>(i) : 0;
    if ((rank_ == 0 && r == 0) || p.finished || p.closed) continue;
    const double silent = now - p.last_seen;
    if (silent > options_.heartbeat_timeout_s) {
      fail(r, "no heartbeat for " + seconds_text(silent) +
                  ": its process or host is hung, or the network to it is down");
      return;
    }
  }
}

void Watchdog::check_collectives(double now) {
  // Everyone's position: rank 0 from its own counters, the others from their last heartbeat.
  std::vector<uint64_t> entered(static_cast<size_t>(world_));
  std::vector<double> inside(static_cast<size_t>(world_));
  std::vector<std::string> op(static_cast<size_t>(world_));
  for (int r = 0; r < world_; ++r) {
    const auto i = static_cast<size_t>(r);
    if (r == 0) {
      entered[i] = entered_.load();
      inside[i] = in_collective_s(now);
      op[i] = op_.load();
    } else {
      entered[i] = peers_[i].entered;
      inside[i] = peers_[i].in_collective_s;
      op[i] = peers_[i].op;
    }
  }
  for (int r = 0; r < world_; ++r) {
    const auto i = static_cast<size_t>(r);
    if (inside[i] <= options_.collective_timeout_s) continue;
    const uint64_t s = entered[i];
    const std::string what = "collective #" + std::to_string(s) + " (" + op[i] + ")";
    std::vector<int> behind;
    for (int q = 0; q < world_; ++q) {
      const auto j = static_cast<size_t>(q);
      if (entered[j] < s && !(q > 0 && peers_[j].finished)) behind.push_back(q);
    }
    if (behind.empty()) {
      fail(-1, "every rank has been inside " + what + " for over " +
                   seconds_text(options_.collective_timeout_s) +
                   " (comm.timeout_s): the transport is stalled");
      return;
    }
    const auto b = static_cast<size_t>(behind[0]);
    std::string why = "it has not joined " + what + ", which rank " + std::to_string(r) +
                      " has waited in for " + seconds_text(inside[i]) + " (comm.timeout_s " +
                      seconds_text(options_.collective_timeout_s) + "); it last entered collective #" +
                      std::to_string(entered[b]) + " (" + op[b] + ")" +
                      (inside[b] >= 0 ? " and is still inside it" : " and is busy outside collectives");
    if (behind.size() > 1) {
      why += "; also behind: ranks";
      for (size_t k = 1; k < behind.size(); ++k) why += " " + std::to_string(behind[k]);
    }
    fail(behind[0], why);
    return;
  }
}

void Watchdog::fail(int lost, const std::string& why) {
  if (tripped_.exchange(true)) return;
  const std::string message = lost >= 0 ? "lost " + describe(lost) + ": " + why : why;
  if (rank_ == 0) {
    Message abort;
    abort.type = kAbort;
    abort.rank = 0;
    abort.subject = lost;
    copy_text(abort.text, message);
    for (auto& p : peers_) {
      if (p.fd >= 0 && !p.closed) tcp_send(p.fd, &abort, sizeof(abort));
    }
    if (!exit_) {
      // Give the message time to arrive before our exit resets the connections: wait (briefly)
      // for the ranks to hang up, reading what they still send.
      const double until = now_s() + 2.0;
      for (auto& p : peers_) {
        while (p.fd >= 0 && !p.closed && now_s() < until) {
          pollfd pfd{p.fd, POLLIN, 0};
          ::poll(&pfd, 1, 50);
          std::string drain;
          if (tcp_recv_available(p.fd, &drain) == RecvStatus::kClosed) p.closed = true;
        }
      }
    }
  }
  terminate(message);
}

void Watchdog::report_local_error(const std::string& error) {
  if (rank_ == 0) {
    fail(-1, describe(0) + " reported a fatal error: " + error);
    return;
  }
  if (tripped_.exchange(true)) return;
  // Rank 0 reads this before the connection closes, and tells everyone.
  Message m;
  m.type = kAbort;
  m.rank = rank_;
  m.subject = rank_;
  copy_text(m.text, error);
  if (peers_[0].fd >= 0 && !peers_[0].closed) tcp_send(peers_[0].fd, &m, sizeof(m));
  terminate(error);
}

void Watchdog::terminate(const std::string& message) {
  std::fprintf(stderr, "dynamix: rank %d: watchdog: %s; exiting with status %d\n", rank_, message.c_str(),
               kExitLostRank);
  std::fflush(stderr);
  if (on_abort_) on_abort_();
  if (exit_) {
    exit_(kExitLostRank, message);
    return;
  }
  std::fflush(stdout);
  std::_Exit(kExitLostRank);  // the main thread may be blocked in MPI: no destructors, no MPI calls
}

template <typename F>
void WatchedCommunicator::watched(const char* op, F&& call) {
  if (!watchdog_) {
    call();
    return;
  }
  watchdog_->enter(op);
  try {
    call();
  } catch (...) {
    watchdog_->leave();
    throw;
  }
  watchdog_->leave();
}

void WatchedCommunicator::allreduce_sum(void* buffer, size_t count, DType dtype) {
  watched("allreduce", [&] { inner_.allreduce_sum(buffer, count, dtype); });
}
void WatchedCommunicator::allreduce_max(void* buffer, size_t count, DType dtype) {
  watched("allreduce_max", [&] { inner_.allreduce_max(buffer, count, dtype); });
}
void WatchedCommunicator::broadcast(void* buffer, size_t count, DType dtype, int root) {
  watched("broadcast", [&] { inner_.broadcast(buffer, count, dtype, root); });
}
void WatchedCommunicator::gather(const void* send, size_t bytes, void* recv, int root) {
  watched("gather", [&] { inner_.gather(send, bytes, recv, root); });
}
void WatchedCommunicator::allgather(const void* send, size_t bytes, void* recv) {
  watched("allgather", [&] { inner_.allgather(send, bytes, recv); });
}
void WatchedCommunicator::barrier() {
  watched("barrier", [&] { inner_.barrier(); });
}

}  // namespace dynamix
