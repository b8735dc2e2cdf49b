// DYNAMIX — `dynamix inspect CHECKPOINT`.
#include <sys/stat.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "framework/cli/commands.h"
#include "framework/core/error.h"
#include "framework/train/checkpoint.h"
#include "framework/train/checkpoint_file.h"
#include "framework/train/run_outputs.h"

namespace dynamix {

int run_inspect(const std::string& given, bool json) {
  try {
    // A run's output directory stands for the checkpoint in it.
    std::string path = given;
    struct stat st {};
    if (::stat(given.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      path = RunOutputs::checkpoint_path_in(given);
      if (::stat(path.c_str(), &st) != 0) {
        throw Error(
            "'" + given +
            "' is a directory without a checkpoint.pt; give a checkpoint file or a run's output directory");
      }
    }
    const TrainProgress p = peek_checkpoint(read_checkpoint_file(path), path);
    nlohmann::json j = {{"path", path},
                        {"format_version", kCheckpointVersion},
                        {"model", p.model},
                        {"optimizer", p.optimizer},
                        {"policy", p.policy},
                        {"world_size", p.world_size},
                        {"step", p.step},
                        {"epoch", p.epoch},
                        {"cursor", p.cursor},
                        {"plan", p.plan},
                        {"batch_max", p.batch_max},
                        {"oom_events", p.oom_events},
                        {"elapsed_s", p.elapsed_s},
                        {"best_test_accuracy", p.best_test_accuracy},
                        {"last_test_accuracy", p.last_test_accuracy},
                        {"last_eval_step", p.last_eval_step},
                        {"policy_state_bytes", p.policy_state.size()}};
    if (json) {
      std::printf("%s\n", j.dump(2).c_str());
    } else {
      for (auto it = j.begin(); it != j.end(); ++it)
        std::printf("%-20s %s\n", it.key().c_str(), it.value().dump().c_str());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dynamix: error: %s\n", brief_error(e).c_str());
    return 2;
  }
  return 0;
}

}  // namespace dynamix
