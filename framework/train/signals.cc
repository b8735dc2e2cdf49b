// DYNAMIX — preemption and interrupt signals.
#include "framework/train/signals.h"

#include <csignal>

namespace dynamix {
namespace {
volatile std::sig_atomic_t g_stop_signal = 0;

extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }
}  // namespace

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // blocking MPI/IO calls resume; the flag is read at step boundaries
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
  // SIGINT: once; the handler then reverts to the default, so a second Ctrl-C interrupts at once.
  sa.sa_flags = SA_RESTART | SA_RESETHAND;
  sigaction(SIGINT, &sa, nullptr);
}

bool stop_requested() { return g_stop_signal != 0; }
int stop_signal() { return static_cast<int>(g_stop_signal); }
void clear_stop_request() { g_stop_signal = 0; }

}  // namespace dynamix
