// DYNAMIX — build a model by its name: one table from names to factories.
#include "models/registry.h"

#include <cstring>
#include <functional>
#include <map>
#include <sstream>

#include "framework/core/error.h"
#include "models/bert.h"
#include "models/ncf.h"
#include "models/resnet.h"
#include "models/simple.h"
#include "models/torchscript.h"
#include "models/vgg.h"

namespace dynamix {
namespace {

using Factory = std::function<ModelPtr(const std::string& name, const ModelSpec& spec)>;

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream os;
  os << "{";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? "," : "") << shape[i];
  os << "}";
  return os.str();
}

// Image models take {C,H,W} with positive sizes and predict classes.
void check_image_spec(const std::string& name, const ModelSpec& spec, int64_t min_hw) {
  DYNAMIX_CHECK(spec.task == "classify",
                "model '" + name + "': task '" + spec.task + "' is not supported (expected 'classify')");
  DYNAMIX_CHECK(spec.input_shape.size() == 3,
                "model '" + name + "': input_shape " + shape_text(spec.input_shape) + " must be {C,H,W}");
  DYNAMIX_CHECK(spec.input_shape[0] > 0 && spec.input_shape[1] >= min_hw && spec.input_shape[2] >= min_hw,
                "model '" + name + "': input_shape " + shape_text(spec.input_shape) +
                    " needs C >= 1 and H, W >= " + std::to_string(min_hw));
}

const std::map<std::string, Factory>& table() {
  static const std::map<std::string, Factory> t = [] {
    std::map<std::string, Factory> m;
    m["cnn"] = [](const std::string& name, const ModelSpec& s) -> ModelPtr {
      check_image_spec(name, s, 4);  // two 2x2 pools
      return std::make_shared<Cnn>(s.input_shape[0], s.input_shape[1], s.input_shape[2], s.num_classes);
    };
    m["ncf"] = [](const std::string& name, const ModelSpec& s) -> ModelPtr {
      DYNAMIX_CHECK(
          s.task == "classify" && s.input_shape == std::vector<int64_t>{2} && s.input_cardinality.size() == 2,
          "model '" + name + "' needs (user, item) pairs with known id counts, e.g. dataset " +
              "synthetic_interactions; got input_shape " + shape_text(s.input_shape));
      return std::make_shared<Ncf>(s.input_cardinality[0], s.input_cardinality[1], 32, s.num_classes);
    };
    m["mlp"] = [](const std::string& name, const ModelSpec& s) -> ModelPtr {
      DYNAMIX_CHECK(s.task == "classify",
                    "model '" + name + "': task '" + s.task + "' is not supported (expected 'classify')");
      DYNAMIX_CHECK(!s.input_shape.empty(), "model '" + name + "': input_shape is empty");
      int64_t features = 1;
      for (int64_t d : s.input_shape) {
        DYNAMIX_CHECK(d > 0, "model '" + name + "': input_shape " + shape_text(s.input_shape) +
                                 " has a non-positive size");
        features *= d;
      }
      return std::make_shared<Mlp>(features, s.num_classes);
    };
    for (int depth : {18, 34, 50, 101}) {
      for (bool cifar : {false, true}) {
        m["resnet" + std::to_string(depth) + (cifar ? "_cifar" : "")] =
            [depth, cifar](const std::string& name, const ModelSpec& s) -> ModelPtr {
          check_image_spec(name, s, 1);
          return make_resnet(depth, cifar, s);
        };
      }
    }
    for (int depth : {11, 13, 16, 19}) {
      for (bool bn : {false, true}) {
        for (bool cifar : {false, true}) {
          m["vgg" + std::to_string(depth) + (bn ? "_bn" : "") + (cifar ? "_cifar" : "")] =
              [depth, bn, cifar](const std::string& name, const ModelSpec& s) -> ModelPtr {
            check_image_spec(name, s, 32);  // five 2x2 pools
            return make_vgg(depth, bn, cifar, s);
          };
        }
      }
    }
    for (const char* size : {"bert_tiny", "bert_mini", "bert_small", "bert_base"}) {
      m[size] = [](const std::string& name, const ModelSpec& s) -> ModelPtr {
        BertConfig c = bert_config(name);
        DYNAMIX_CHECK(
            s.task == "classify" || s.task == "mlm",
            "model '" + name + "': task '" + s.task + "' is not supported (expected 'classify' or 'mlm')");
        DYNAMIX_CHECK(
            s.input_shape.size() == 1 && s.input_shape[0] >= 1 && s.input_shape[0] <= c.max_positions,
            "model '" + name + "': input_shape " + shape_text(s.input_shape) +
                " must be {seq_len} with 1 <= seq_len <= " + std::to_string(c.max_positions));
        DYNAMIX_CHECK(s.task != "mlm" || s.num_classes >= 2,
                      "model '" + name + "': task 'mlm' needs num_classes = vocabulary size >= 2, got " +
                          std::to_string(s.num_classes));
        return make_bert(c, s);
      };
    }
    return m;
  }();
  return t;
}

}  // namespace

ModelPtr make_model(const std::string& name, const ModelSpec& spec) {
  // The input and output shapes of a TorchScript model are checked by running it (the trainer's
  // objective does, on a sample of the data set).
  if (name.rfind(kTorchScriptPrefix, 0) == 0)
    return load_torchscript_model(name.substr(strlen(kTorchScriptPrefix)));
  const auto& t = table();
  auto it = t.find(name);
  if (it == t.end()) {
    std::string known;
    for (const auto& kv : t) known += (known.empty() ? "" : ", ") + kv.first;
    throw Error("unknown model '" + name + "' (key 'model'); known models: " + known +
                ", or torchscript:PATH for a TorchScript file");
  }
  DYNAMIX_CHECK(spec.num_classes >= 1,
                "model '" + name + "': num_classes must be >= 1, got " + std::to_string(spec.num_classes));
  return it->second(name, spec);
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& kv : table()) names.push_back(kv.first);
  return names;
}

}  // namespace dynamix
