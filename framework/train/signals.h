// DYNAMIX — preemption signals. SIGTERM and SIGUSR1 (what Slurm sends before a time limit) set
// a flag; the trainer agrees on it across ranks at the next step boundary, checkpoints, exits 0.
#pragma once

namespace dynamix {

void install_stop_signal_handlers();
bool stop_requested();
int stop_signal();          // the signal that asked (0 if none)
void clear_stop_request();  // for tests

}  // namespace dynamix
