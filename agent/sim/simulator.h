// DYNAMIX — the cluster simulator's public API in one include: config, simulator, runner.
#pragma once

#include "agent/sim/cluster_simulator.h"
#include "agent/sim/sim_config.h"
#include "agent/sim/sim_runner.h"
