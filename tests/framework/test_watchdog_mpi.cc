// DYNAMIX — the watchdog under mpirun -np 3: no false alarms in ordinary traffic or long quiet
// phases, and a rank that does not reach a collective is named to every rank within the timeout.
// (Killed and stopped processes are covered end to end by tests/e2e/test_rank_failure.py.)
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "framework/comm/mpi_communicator.h"
#include "framework/comm/tcp_channel.h"
#include "framework/comm/watchdog.h"

namespace dynamix {
namespace {

struct Decision {
  std::mutex mu;
  std::atomic<int> calls{0};
  int status = 0;
  std::string message;
};

void observe(Watchdog& w, Decision& d) {
  w.set_exit_for_test([&d](int status, const std::string& message) {
    std::lock_guard<std::mutex> lock(d.mu);
    d.status = status;
    d.message = message;
    ++d.calls;
  });
}

TEST(Watchdog, QuietDuringOrdinaryTrafficAndLongPausesOutsideCollectives) {
  MpiCommunicator mpi;
  WatchdogOptions o;
  o.collective_timeout_s = 5;
  o.heartbeat_timeout_s = 2;  // shorter than the pause below: heartbeats come from the thread
  Decision d;
  {
    Watchdog w(mpi, o);
    observe(w, d);
    WatchedCommunicator comm(mpi, &w);
    std::vector<float> buf(1000, 1.0f);
    for (int i = 0; i < 300; ++i) {
      std::fill(buf.begin(), buf.end(), 1.0f);
      comm.allreduce_sum(buf.data(), buf.size(), DType::kFloat32);
    }
    EXPECT_FLOAT_EQ(buf[999], static_cast<float>(mpi.size()));
    std::this_thread::sleep_for(std::chrono::milliseconds(3500));  // e.g. a long evaluation
    int64_t x = mpi.rank();
    comm.allreduce_max(&x, 1, DType::kInt64);
    EXPECT_EQ(x, mpi.size() - 1);
    comm.barrier();
  }
  EXPECT_EQ(d.calls.load(), 0) << d.message;
}

TEST(Watchdog, NamesTheRankThatDoesNotJoinACollective) {
  MpiCommunicator mpi;
  ASSERT_EQ(mpi.size(), 3) << "run with mpirun -np 3";
  WatchdogOptions o;
  o.collective_timeout_s = 1.5;
  o.heartbeat_timeout_s = 30;
  Decision d;
  Watchdog w(mpi, o);
  observe(w, d);
  WatchedCommunicator comm(mpi, &w);
  comm.barrier();  // collective #1 for everyone
  const auto t0 = std::chrono::steady_clock::now();
  if (mpi.rank() == 2) std::this_thread::sleep_for(std::chrono::seconds(5));  // stuck outside
  comm.barrier();                                                             // #2: ranks 0 and 1 wait here
  // Every rank, including the late one, has heard the verdict by the time the barrier completes.
  while (d.calls.load() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_EQ(d.calls.load(), 1);
  EXPECT_TRUE(w.tripped());
  EXPECT_EQ(d.status, kExitLostRank);
  EXPECT_NE(d.message.find("lost rank 2 (pid "), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("has not joined collective #2 (barrier)"), std::string::npos) << d.message;
  EXPECT_NE(d.message.find("busy outside collectives"), std::string::npos) << d.message;
  if (mpi.rank() != 0) {
    EXPECT_EQ(d.message.rfind("rank 0 ends the job: ", 0), 0u) << d.message;
  }
  mpi.barrier();  // tripped watchdogs say no goodbye: none of this may count as another loss
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(d.calls.load(), 1);
}

TEST(Watchdog, ATransportErrorOnOneRankEndsTheJobEverywhereAndAbortsTheTransport) {
  // NCCL collectives return before they finish; their failures surface as asynchronous errors
  // that the watchdog polls (NcclCommunicator::check_async_error). Here rank 2's poll reports one.
  MpiCommunicator mpi;
  ASSERT_EQ(mpi.size(), 3) << "run with mpirun -np 3";
  WatchdogOptions o;
  o.collective_timeout_s = 30;
  o.heartbeat_timeout_s = 30;
  const auto t0 = std::chrono::steady_clock::now();
  std::atomic<int> polls{0};
  if (mpi.rank() == 2) {
    o.poll_error = [&polls, t0]() -> std::string {
      ++polls;
      if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1500)) return {};
      return "NCCL asynchronous error on rank 2: remote process exited or there was a network error";
    };
  }
  std::atomic<int> aborts{0};
  Decision d;
  {
    Watchdog w(mpi, o, [&aborts] { ++aborts; });
    observe(w, d);
    while (d.calls.load() == 0 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(10)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ASSERT_EQ(d.calls.load(), 1);
    EXPECT_EQ(d.status, kExitLostRank);
    EXPECT_EQ(aborts.load(), 1) << "the transport (NCCL communicator) must be aborted before exiting";
    EXPECT_NE(d.message.find("remote process exited or there was a network error"), std::string::npos)
        << d.message;
    if (mpi.rank() == 2) {
      EXPECT_GE(polls.load(), 2) << "polled once per heartbeat interval";
    } else {
      EXPECT_NE(d.message.find("lost rank 2 (pid "), std::string::npos) << d.message;
      EXPECT_NE(d.message.find("it reported a fatal error: NCCL asynchronous error"), std::string::npos)
          << d.message;
    }
    if (mpi.rank() == 1) EXPECT_EQ(d.message.rfind("rank 0 ends the job: ", 0), 0u) << d.message;
    mpi.barrier();
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    EXPECT_EQ(d.calls.load(), 1);
  }
}

TEST(Watchdog, TurnsAwayAConnectionWithoutTheJobTokenAndTheJobStillForms) {
  // A stray process reaches rank 0's watchdog port before any rank, with a wrong token and then
  // what could pass for a hello. Rank 0 must close it, log it, not count it as a rank, and go on
  // accepting the real ranks.
  MpiCommunicator mpi;
  WatchdogOptions o;
  int stray = -1;
  if (mpi.rank() == 0) {
    o.on_listening = [&stray](uint16_t port) {
      stray = tcp_connect("127.0.0.1", port, 5);
      const std::string wrong(64, '\x5a');  // 32 bytes of token, then the start of a "hello"
      if (stray >= 0) tcp_send(stray, wrong.data(), wrong.size());
    };
  }
  Decision d;
  testing::internal::CaptureStderr();
  {
    Watchdog w(mpi, o);
    const std::string log = testing::internal::GetCapturedStderr();
    observe(w, d);
    WatchedCommunicator comm(mpi, &w);
    int64_t x = 1;
    comm.allreduce_sum(&x, 1, DType::kInt64);
    EXPECT_EQ(x, mpi.size()) << "every real rank joined";
    if (mpi.rank() == 0) {
      ASSERT_GE(stray, 0) << "the stray client could not connect";
      EXPECT_EQ(w.rejected_connections(), 1);
      EXPECT_NE(log.find("watchdog: rejected a connection from 127.0.0.1:"), std::string::npos) << log;
      EXPECT_NE(log.find("wrong job token"), std::string::npos) << log;
      // Rank 0 has closed the stray's connection.
      std::string rest;
      RecvStatus status = RecvStatus::kNothing;
      for (int i = 0; i < 50 && status != RecvStatus::kClosed; ++i) {
        status = tcp_recv_available(stray, &rest);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      EXPECT_EQ(status, RecvStatus::kClosed);
      tcp_close(stray);
    } else {
      EXPECT_EQ(w.rejected_connections(), 0);
    }
    comm.barrier();
  }
  EXPECT_EQ(d.calls.load(), 0) << d.message;
}

}  // namespace
}  // namespace dynamix
