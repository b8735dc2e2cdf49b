// DYNAMIX — the watchdog's set-up: rank 0 listens and draws the job token, MPI tells the ranks
// where and what to present, every rank connects and says hello, and strangers are turned away.
#include <poll.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "framework/comm/tcp_channel.h"
#include "framework/comm/watchdog.h"
#include "framework/comm/watchdog_wire.h"
#include "framework/core/clock.h"
#include "framework/core/error.h"
#include "framework/core/host.h"

namespace dynamix {
namespace {

// The kernel's CSPRNG (getrandom(2), the source of /dev/urandom).
void draw_token(unsigned char* token, size_t size) {
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::getrandom(token + got, size - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("watchdog: getrandom() failed: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
}

// Compares every byte whatever the first difference, so that timing tells a guesser nothing.
bool same_token(const unsigned char* a, const unsigned char* b) {
  unsigned char diff = 0;
  for (size_t i = 0; i < kJobTokenBytes; ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// Collective: "" when no rank failed, else the first failing rank's error (named unless rank 0),
// so that every rank reports the cause, not just that some rank failed.
std::string first_error(Communicator& comm, const std::string& error) {
  struct Text {
    char text[320];
  } mine{};
  copy_text(mine.text, error);
  std::vector<Text> all(static_cast<size_t>(comm.size()));
  comm.allgather(&mine, sizeof(Text), all.data());
  for (int r = 0; r < comm.size(); ++r) {
    const std::string text = text_of(all[static_cast<size_t>(r)].text);
    if (!text.empty()) return r == 0 ? text : "rank " + std::to_string(r) + ": " + text;
  }
  return "";
}

}  // namespace

// Where rank 0 listens, and the token its ranks present: broadcast as bytes over MPI.
struct Watchdog::Address {
  uint16_t port = 0;
  uint16_t count = 0;
  char ip[8][64] = {};  // an IPv6 address and a %scope fit
  unsigned char token[kJobTokenBytes] = {};
};

// Rank 0: a connection that has not yet shown the token and said hello.
struct Watchdog::Pending {
  int fd = -1;
  std::string from;  // "ip:port"
  std::string inbox;
  double since = 0;
  bool authenticated = false;
};

void Watchdog::connect_all(Communicator& comm) {
  // Who is who, for messages.
  struct Identity {
    int32_t pid;
    char host[60];
  } mine{static_cast<int32_t>(::getpid()), {}};
  std::snprintf(mine.host, sizeof(mine.host), "%s", host_name().c_str());
  std::vector<Identity> all(static_cast<size_t>(world_));
  comm.allgather(&mine, sizeof(Identity), all.data());
  for (const auto& id : all) identity_.push_back("pid " + std::to_string(id.pid) + " on " + text_of(id.host));

  // The network options, checked on every rank before anyone listens or connects.
  LocalAddresses local;
  std::string error;
  try {
    const int family = address_family(options_.family, options_.family_key);
    local = local_addresses(options_.interface, family, options_.interface_key, options_.family_key);
  } catch (const Error& e) {
    error = e.what();
  }
  const std::string network_error = first_error(comm, error);
  if (!network_error.empty()) throw Error(network_error);

  Address address;
  int listen_fd = -1;
  if (rank_ == 0) {
    try {
      draw_token(address.token, sizeof(address.token));
      listen_fd = tcp_listen_any(local.family, &address.port);
      for (const auto& ip : local.ips) {
        if (address.count == 8) break;
        copy_text(address.ip[address.count++], ip);
      }
      if (options_.on_listening) options_.on_listening(address.port);
    } catch (const Error& e) {
      error = e.what();
    }
  }
  comm.broadcast(&address, sizeof(address), DType::kUInt8, 0);
  for (int i = 0; i < address.count; ++i) {
    root_endpoints_ += (i ? ", " : "") + host_port(text_of(address.ip[i]), address.port);
  }

  const auto start = std::chrono::steady_clock::now();
  const std::function<double()> remaining = [&] { return options_.connect_timeout_s - seconds_since(start); };
  if (rank_ == 0) {
    const std::string accept_error = accept_peers(listen_fd, address, remaining);
    if (error.empty()) error = accept_error;
  } else {
    error = connect_to_root(address, remaining);
  }
  std::memset(address.token, 0, sizeof(address.token));

  // Agree before anyone relies on the channel.
  const std::string setup_error = first_error(comm, error);
  if (!setup_error.empty()) {
    for (auto& p : peers_) tcp_close(p.fd);
    peers_.clear();
    throw Error(setup_error);
  }
  const double now = now_s();
  for (auto& p : peers_) p.last_seen = now;
}

void Watchdog::reject(Pending& p, const std::string& why) {
  std::fprintf(stderr, "dynamix: rank 0: watchdog: rejected a connection from %s: %s\n", p.from.c_str(),
               why.c_str());
  std::fflush(stderr);
  ++rejected_;
  tcp_close(p.fd);
  p.fd = -1;
}

std::string Watchdog::accept_peers(int listen_fd, const Address& address,
                                   const std::function<double()>& remaining) {
  peers_.resize(static_cast<size_t>(world_));
  // Accept until every rank has shown the token and said hello (a rank is known by its hello, not
  // its address); anything else on the port is closed, and accepting goes on.
  std::vector<Pending> pending;
  int joined = 0;
  while (listen_fd >= 0 && joined < world_ - 1 && remaining() > 0) {
    std::vector<pollfd> fds{{listen_fd, POLLIN, 0}};
    for (const auto& p : pending) fds.push_back({p.fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
    Pending fresh;
    while ((fresh.fd = tcp_accept(listen_fd, &fresh.from)) >= 0) {
      fresh.since = now_s();
      pending.push_back(fresh);
    }
    for (auto& p : pending) {
      const bool closed = tcp_recv_available(p.fd, &p.inbox) == RecvStatus::kClosed;
      if (!p.authenticated && p.inbox.size() >= kJobTokenBytes) {
        if (!same_token(reinterpret_cast<const unsigned char*>(p.inbox.data()), address.token)) {
          reject(p, "wrong job token (not a rank of this job)");
          continue;
        }
        p.authenticated = true;
        p.inbox.erase(0, kJobTokenBytes);
      }
      if (!p.authenticated) {
        if (closed) {
          reject(p, "closed before presenting the job token");
        } else if (now_s() - p.since > options_.token_timeout_s) {
          reject(p, "no job token within " + seconds_text(options_.token_timeout_s));
        }
        continue;
      }
      if (p.inbox.size() < sizeof(Message)) {
        if (closed) reject(p, "closed before saying which rank it is");
        continue;
      }
      Message hello;
      std::memcpy(&hello, p.inbox.data(), sizeof(hello));
      const bool valid = hello.magic == kWatchdogMagic && hello.type == kHello && hello.rank > 0 &&
                         hello.rank < world_ && peers_[static_cast<size_t>(hello.rank)].fd < 0;
      if (!valid) {
        reject(p, "the job token, but a malformed hello or a rank that has already joined");
        continue;
      }
      Peer& peer = peers_[static_cast<size_t>(hello.rank)];
      peer.fd = p.fd;
      peer.inbox = p.inbox.substr(sizeof(Message));
      ++joined;
      p.fd = -1;
    }
    pending.erase(std::remove_if(pending.begin(), pending.end(), [](const Pending& p) { return p.fd < 0; }),
                  pending.end());
  }
  for (auto& p : pending) reject(p, "still not a rank when the job had formed");
  tcp_close(listen_fd);
  if (joined == world_ - 1) return "";
  std::string missing;
  for (int r = 1; r < world_; ++r) {
    if (peers_[static_cast<size_t>(r)].fd < 0) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
  }
  return "watchdog: ranks " + missing + " did not connect to rank 0 within " +
         seconds_text(options_.connect_timeout_s) + " (TCP port " + std::to_string(address.port) + ")";
}

std::string Watchdog::connect_to_root(const Address& address, const std::function<double()>& remaining) {
  if (address.count == 0) return "watchdog: rank 0 could not open its TCP port";
  peers_.resize(1);
  std::string tried;
  for (int i = 0; i < address.count && peers_[0].fd < 0 && remaining() > 0; ++i) {
    const std::string ip = text_of(address.ip[i]);
    peers_[0].fd = tcp_connect(ip, address.port, std::min(5.0, std::max(0.1, remaining())));
    if (peers_[0].fd < 0) {
      tried += (tried.empty() ? "" : ", ") + host_port(ip, address.port) + ": " + std::strerror(errno);
    }
  }
  if (peers_[0].fd < 0) {
    return "watchdog: cannot reach rank 0 (" + tried + ")";
  }
  // The token first, then the hello, in one send.
  Message hello;
  hello.type = kHello;
  hello.rank = rank_;
  std::string first(reinterpret_cast<const char*>(address.token), kJobTokenBytes);
  first.append(reinterpret_cast<const char*>(&hello), sizeof(hello));
  if (!tcp_send(peers_[0].fd, first.data(), first.size()))
    return "watchdog: lost the connection to rank 0 at once";
  return "";
}

}  // namespace dynamix
