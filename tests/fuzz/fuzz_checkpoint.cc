// DYNAMIX fuzz target — checkpoint loading: the checksummed container, the LibTorch archive and
// the JSON progress record inside it, restored into a tiny model and optimizer.
// Input: [mode][flags][rest], by mode % 4:
//   0: rest is a checkpoint file: read_checkpoint_file (a file in memory), then its payload decoded.
//   1: rest is a payload, decoded as if the checksum had matched (the container rejects almost
//      every mutation, so this is how mutations reach the archive reader).
//   2: rest is the JSON progress record; the archive around it is written here, `flags` choosing
//      what the writer holds (see write_archive).
//   3: as 2, but rest edits the record our writer makes for one rank: 10-byte records
//      [key][kind][8 value bytes], each setting one key to a value of some JSON type or removing
//      it (see edit_meta). Random bytes rarely stay valid JSON; this reaches the fields.
// A checkpoint that decodes must be resumable: see check_resumable.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "framework/core/error.h"
#include "framework/train/checkpoint.h"
#include "framework/train/checkpoint_file.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/tiny_checkpoint.h"

namespace {

using dynamix::TrainProgress;
using dynamix::fuzz::fail;
using dynamix::fuzz::TinyRun;

struct Written {
  std::string payload;
  bool same_model;                    // the reader's layout (2 outputs, float32)
  std::vector<torch::Tensor> params;  // the writer's, to compare with what decode restores
};

// flags bit 0: model with 3 outputs (shapes differ), bit 1: float64 model, bit 2: AdamW state,
// bit 3: policy_state as float tensor, bits 4-5: number of rng entries, bit 6: no model section,
// bit 7: no optimizer section.
Written write_archive(const std::string& meta, uint8_t flags) {
  TinyRun writer((flags & 1) ? 3 : 2, flags & 4, flags & 2);
  writer.step();
  torch::serialize::OutputArchive ar;
  ar.write("meta", c10::IValue(meta));
  ar.write("policy_state", (flags & 8) ? torch::ones({2}) : torch::zeros({2}, torch::kUInt8));
  std::string rng = dynamix::generator_state();
  const auto rng_tensor = torch::from_blob(rng.data(), {static_cast<int64_t>(rng.size())}, torch::kUInt8);
  for (int r = 0; r < ((flags >> 4) & 3); ++r) ar.write("rng/" + std::to_string(r), rng_tensor.clone());
  torch::serialize::OutputArchive model_ar, opt_ar;
  writer.model->save(model_ar);
  writer.optimizer->save(opt_ar);
  if (!(flags & 64)) ar.write("model", model_ar);
  if (!(flags & 128)) ar.write("optimizer", opt_ar);
  std::ostringstream out;
  ar.save_to(out);
  return {out.str(), (flags & 3) == 0, writer.model->parameters()};
}

// The progress record of a one-rank checkpoint from our writer (encode_checkpoint).
const nlohmann::json& base_meta() {
  static const nlohmann::json meta = [] {
    TinyRun run;
    const std::string payload =
        dynamix::encode_checkpoint(*run.model, *run.optimizer, dynamix::fuzz::tiny_progress(1));
    std::istringstream in(payload);
    torch::serialize::InputArchive ar;
    ar.load_from(in);
    c10::IValue v;
    ar.read("meta", v);
    return nlohmann::json::parse(v.toStringRef());
  }();
  return meta;
}

std::string edit_meta(const std::string& edits) {
  nlohmann::json j = base_meta();
  std::vector<std::string> keys;
  for (const auto& item : j.items()) keys.push_back(item.key());
  keys.push_back("unknown_key");
  for (size_t at = 0; at + 10 <= edits.size(); at += 10) {
    const std::string& key = keys[static_cast<uint8_t>(edits[at]) % keys.size()];
    const uint8_t kind = static_cast<uint8_t>(edits[at + 1]);
    const char* raw = edits.data() + at + 2;
    int64_t i64;
    double f64;
    std::memcpy(&i64, raw, 8);
    std::memcpy(&f64, raw, 8);
    switch (kind % 8) {
      case 0:
        j.erase(key);
        break;
      case 1:
        j[key] = i64;
        break;
      case 2:
        j[key] = static_cast<int8_t>(raw[0]);
        break;
      case 3:
        j[key] = f64;
        break;  // NaN and infinities are written as null
      case 4:
        j[key] = static_cast<uint64_t>(i64);
        break;
      case 5:
        j[key] = std::string(raw, static_cast<size_t>(static_cast<uint8_t>(raw[0]) % 8));
        break;
      case 6:
        j[key] = std::vector<int64_t>(raw + 1, raw + 1 + static_cast<uint8_t>(raw[0]) % 8);
        break;
      default:
        j[key] = (raw[0] & 1) ? nlohmann::json(nullptr) : nlohmann::json(bool(raw[1] & 1));
        break;
    }
  }
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // kind 5 may not be UTF-8
}

// What Trainer::prepare relies on after decode_checkpoint returns: the configured model keeps its
// shapes and types, the optimizer state fits it, every rank's RNG state loads, and the plan has
// one batch per rank.
void check_resumable(const TrainProgress& p, TinyRun& run) {
  const TinyRun fresh;
  const auto want = fresh.model->named_parameters(), got = run.model->named_parameters();
  const auto want_b = fresh.model->named_buffers(), got_b = run.model->named_buffers();
  for (const auto* pair : {&want, &want_b}) {
    const auto& have = pair == &want ? got : got_b;
    for (const auto& item : *pair) {
      const torch::Tensor* t = have.find(item.key());
      if (t == nullptr || t->sizes() != item.value().sizes() || t->dtype() != item.value().dtype()) {
        fail("decode_checkpoint changed the shape or type of '" + item.key() + "'");
      }
    }
  }
  try {
    run.step();
  } catch (const c10::Error& e) {
    fail(std::string("decoded model/optimizer cannot take a step: ") + e.what_without_backtrace());
  }
  if (p.world_size < 1 || p.plan.size() != static_cast<size_t>(p.world_size) ||
      p.rng_states.size() != p.plan.size() || p.step < 0 || p.epoch < 0 || p.cursor < 0) {
    fail("decoded progress is inconsistent (world_size " + std::to_string(p.world_size) + ", plan of " +
         std::to_string(p.plan.size()) + ", " + std::to_string(p.rng_states.size()) + " rng states)");
  }
  const std::string saved = dynamix::generator_state();
  for (const std::string& s : p.rng_states) {
    try {
      dynamix::set_generator_state(s);
    } catch (const c10::Error& e) {
      fail(std::string("decoded RNG state does not load: ") + e.what_without_backtrace());
    }
  }
  dynamix::set_generator_state(saved);
}

// peek_checkpoint (dynamix inspect) is the first half of this and is not called separately.
// `written`: what the archive holds, when the harness wrote it (modes 2 and 3).
void decode(const std::string& payload, const Written* written = nullptr) {
  TinyRun run;
  run.step();
  TrainProgress p;
  try {
    p = dynamix::decode_checkpoint(payload, *run.model, *run.optimizer, "fuzz");
  } catch (const dynamix::Error&) {
    return;
  }
  if (written != nullptr) {
    if (!written->same_model) fail("decode_checkpoint accepted the checkpoint of another model");
    const auto restored = run.model->parameters();
    for (size_t i = 0; i < restored.size(); ++i) {
      if (!torch::equal(restored[i], written->params[i])) fail("decode_checkpoint restored other values");
    }
  }
  check_resumable(p, run);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0] % 4, flags = data[1];
  const std::string rest(reinterpret_cast<const char*>(data) + 2, size - 2);
  if (mode == 0) {
    const dynamix::fuzz::MemFile file(rest.data(), rest.size());
    std::string payload;
    try {
      payload = dynamix::read_checkpoint_file(file.path());
    } catch (const dynamix::Error&) {
      return 0;
    }
    decode(payload);
  } else if (mode == 1) {
    decode(rest);
  } else {
    const Written w = write_archive(mode == 2 ? rest : edit_meta(rest), flags);
    decode(w.payload, &w);
  }
  return 0;
}
