// DYNAMIX — the watchdog: bounds every collective and notices lost ranks, so that a dead or hung
// process ends the job within seconds, with a message naming it, instead of leaving the others
// blocked for hours (srun does not kill the other tasks by default; MPI collectives never time out).
//
// A thread per rank keeps a TCP channel to rank 0, independent of MPI (star: rank 0 hears from
// every rank, every rank from rank 0). Each second a rank reports how many collectives it has
// entered and how long it has been inside the current one. Rank 0 decides:
//   - a closed connection without a goodbye: that process died (detected at once);
//   - silence longer than heartbeat_timeout_s: that rank's host or process is hung;
//   - a rank inside collective #S longer than collective_timeout_s: the ranks that have not
//     reached #S are named (or, if all are inside, the transport is declared stalled);
//   - a rank whose poll_error hook reports a transport error (NCCL's asynchronous errors:
//     device collectives return at once, so their failures surface there).
// Only ranks of this job may join: rank 0 draws a random token, MPI hands it to the ranks before
// they connect, and each presents it first; rank 0 closes (and logs) any other connection.
// Rank 0 tells every live rank why, and each one exits with kExitLostRank after running the
// on_abort hook (the NCCL communicator's abort, on GPUs). Ranks lose rank 0 the same way.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "framework/comm/communicator.h"

namespace dynamix {

// Exit status of a rank ended by the watchdog (EX_TEMPFAIL: the job may be retried from its
// last checkpoint).
constexpr int kExitLostRank = 75;

struct WatchdogOptions {
  double collective_timeout_s = 300;  // longest any one collective may take
  double heartbeat_timeout_s = 30;    // silence after which a rank counts as lost
  double heartbeat_interval_s = 1;
  double connect_timeout_s = 60;  // for every rank to reach rank 0 at start
  double token_timeout_s = 5;     // for a new connection to present the job token
  // Where the channel runs (comm.watchdog_interface / comm.watchdog_family, or the environment's
  // DYNAMIX_SOCKET_IFNAME / DYNAMIX_SOCKET_FAMILY; the *_key fields name the source in errors).
  std::string interface;        // "" = every interface that is up
  std::string family = "auto";  // auto (IPv4 if there is an IPv4 address, else IPv6) | ipv4 | ipv6
  std::string interface_key = "comm.watchdog_interface";
  std::string family_key = "comm.watchdog_family";
  // Asked on the watchdog's thread every heartbeat interval: a non-empty answer is a fatal error
  // of this rank's transport (NCCL's asynchronous errors: a peer lost inside a kernel, a network
  // failure), and ends the job on every rank with that message. Must be thread-safe.
  std::function<std::string()> poll_error;
  // Rank 0, tests: called with the port once it listens, before the ranks learn it.
  std::function<void(uint16_t port)> on_listening;
};

class Watchdog {
 public:
  // Terminates the process; tests replace it to observe the decision instead.
  using ExitFn = std::function<void(int status, const std::string& message)>;

  // Collective over `comm` (MPI; not yet watched): every rank checks the network options, rank 0
  // listens and broadcasts its addresses and the job token, and every other rank connects. Throws
  // dynamix::Error on every rank, with the first failing rank's error, if the channel cannot be set up.
  Watchdog(Communicator& comm, WatchdogOptions options, std::function<void()> on_abort = {});
  // Says goodbye (an orderly exit is not a loss) and stops the thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Main thread, around every collective: `op` must be a string literal.
  void enter(const char* op);
  void leave();

  void set_exit_for_test(ExitFn exit);
  // Whether the watchdog has decided to end the job (tests).
  bool tripped() const { return tripped_.load(); }
  const WatchdogOptions& options() const { return options_; }
  // Where rank 0 listens: "[::1]:40123", several separated by ", ".
  const std::string& root_endpoints() const { return root_endpoints_; }
  // Rank 0: connections closed at set-up for want of the job token (strays, port scanners).
  int rejected_connections() const { return rejected_; }

  // Description of a rank for messages: "rank 2 (pid 4711 on node07)".
  std::string describe(int rank) const;

 private:
  struct Peer;
  struct Message;
  struct Address;
  struct Pending;

  void run();
  // Set-up (collective): rank 0 accepts a TCP connection from every other rank, which says hello;
  // every rank learns whether all succeeded. Throws Error if any failed.
  void connect_all(Communicator& comm);
  // Rank 0: accepts every other rank that presents the job token until connect_timeout_s; the
  // error, or "" when all joined.
  std::string accept_peers(int listen_fd, const Address& address, const std::function<double()>& remaining);
  // Other ranks: connects to rank 0 at one of its addresses and says hello; the error, or "".
  std::string connect_to_root(const Address& address, const std::function<double()>& remaining);
  // Rank 0: closes a set-up connection that is not a rank of this job, and logs why.
  void reject(Pending& p, const std::string& why);
  void handle(int from, const Message& m);
  void check_peers(double now);
  void check_collectives(double now);
  void send_heartbeats();
  // Rank 0: tells every live rank, then ends this process. Others: ends this process.
  void fail(int lost, const std::string& why);
  void terminate(const std::string& message);
  // This rank's poll_error hook fired: rank 0 is told (it ends the job everywhere), then exit.
  void report_local_error(const std::string& error);
  double now_s() const;
  double in_collective_s(double now) const;

  const WatchdogOptions options_;
  std::function<void()> on_abort_;
  ExitFn exit_;
  int rank_ = 0;
  int world_ = 1;
  std::vector<std::string> identity_;  // per rank: "pid P on HOST"
  std::vector<Peer> peers_;            // rank 0: one per rank (self unused); others: [0] = rank 0
  int rejected_ = 0;
  std::string root_endpoints_;
  std::atomic<uint64_t> entered_{0};
  std::atomic<int64_t> collective_start_ns_{0};  // 0 when not inside a collective
  std::atomic<const char*> op_{"none"};
  std::atomic<bool> stop_{false};
  std::atomic<bool> tripped_{false};
  double last_sent_ = -1e9;
  double last_polled_ = 0;  // poll_error, from the first heartbeat interval on
  std::thread thread_;
};

// A Communicator that reports every collective to a Watchdog (pass-through when it is null).
class WatchedCommunicator final : public Communicator {
 public:
  WatchedCommunicator(Communicator& inner, Watchdog* watchdog) : inner_(inner), watchdog_(watchdog) {}

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string backend() const override { return inner_.backend(); }
  bool reduces_device_buffers() const override { return inner_.reduces_device_buffers(); }
  void allreduce_sum(void* buffer, size_t count, DType dtype) override;
  void allreduce_max(void* buffer, size_t count, DType dtype) override;
  void broadcast(void* buffer, size_t count, DType dtype, int root) override;
  void gather(const void* send, size_t bytes, void* recv, int root) override;
  void allgather(const void* send, size_t bytes, void* recv) override;
  void barrier() override;
  void set_deferred_join(bool deferred) override { inner_.set_deferred_join(deferred); }
  void join_device_collectives() override { inner_.join_device_collectives(); }
  std::string check_async_error() override { return inner_.check_async_error(); }
  void abort() override { inner_.abort(); }

 private:
  template <typename F>
  void watched(const char* op, F&& call);

  Communicator& inner_;
  Watchdog* watchdog_;
};

}  // namespace dynamix
