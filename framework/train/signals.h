// DYNAMIX — preemption and interrupt signals. SIGTERM and SIGUSR1 (what Slurm sends before a time
// limit) and SIGINT (Ctrl-C of a run started without a launcher, srun forwarding it) set a flag;
// the trainer agrees on it across ranks at the next step boundary, checkpoints, exits 0. A second
// SIGINT ends the process at once (the default action), for a run that must not wait.
//
// mpirun (Open MPI 4.1) does not forward SIGINT or SIGTERM: it sends SIGCONT + SIGTERM to every
// rank, SIGKILL odls_base_sigkill_timeout (1) seconds later, and exits 1 whatever the ranks
// return. So `kill -USR1 <mpirun>` (forwarded) is the way to stop an mpirun job with exit 0.
#pragma once

namespace dynamix {

void install_stop_signal_handlers();
bool stop_requested();
int stop_signal();          // the signal that asked (0 if none)
void clear_stop_request();  // for tests

}  // namespace dynamix
