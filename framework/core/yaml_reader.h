// DYNAMIX — typed, path-aware reads from a yaml-cpp tree; every failure names the key and its origin.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace dynamix {

// Where a key's value came from: the config file, or a `--set` override that replaced it.
class ConfigOrigin {
 public:
  explicit ConfigOrigin(std::string file) : file_(std::move(file)) {}
  void add_override(const std::string& key, const std::string& text);
  // "file", or "file (override 'k=v')" when the last override touching one of `paths` (or a
  // parent key of one) wrote it.
  std::string describe(const std::vector<std::string>& paths) const;
  // Throws "describe(paths): msg"; fail_keys for checks that involve several keys.
  [[noreturn]] void fail_keys(const std::vector<std::string>& paths, const std::string& msg) const;
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const { fail_keys({path}, msg); }
  const std::string& file() const { return file_; }

 private:
  std::string file_;
  std::vector<std::pair<std::string, std::string>> overrides_;  // (key path, full override text)
};

// Parses YAML text; a syntax error becomes dynamix::Error "origin:line:col: YAML syntax error: ...".
YAML::Node load_yaml_text(const std::string& text, const std::string& origin);
// Applies "key.sub=value" (value parsed as YAML) to `root`, creating parent mappings as needed.
void apply_override(YAML::Node& root, const std::string& override_text, ConfigOrigin& origin);
// Keys and values hold no control characters (bytes below 0x20, and 0x7f): a carriage return or a
// line break inside a name is a mangled file, and would not survive the run's saved config.yaml
// (YAML folds line breaks). Throws naming the key path.
void check_no_control_characters(const YAML::Node& node, const std::string& path, const ConfigOrigin& origin);
// Block-style YAML text of a node.
std::string emit_yaml(const YAML::Node& node);
// "a.b" from ("a", "b"); "b" from ("", "b").
std::string join_key(const std::string& parent, const std::string& key);

// Reads typed values with strict YAML rules: numbers and booleans must be plain (unquoted)
// scalars, integers reject fractions, booleans are exactly true/false.
class YamlReader {
 public:
  using Setter = std::function<void(const YAML::Node& value, const std::string& path)>;
  struct Field {
    const char* key;
    Setter set;
  };

  explicit YamlReader(const ConfigOrigin& origin) : origin_(origin) {}

  // `node` must be a mapping (null counts as empty) with keys from `fields`; calls each key's setter.
  void section(const YAML::Node& node, const std::string& path, const std::vector<Field>& fields) const;
  // `node` must be a list; calls `each` for every element with path "path[i]".
  void list(const YAML::Node& node, const std::string& path, const Setter& each) const;

  int64_t integer(const YAML::Node& node, const std::string& path) const;
  int32_t int32(const YAML::Node& node, const std::string& path) const;
  uint64_t unsigned_integer(const YAML::Node& node, const std::string& path) const;
  double number(const YAML::Node& node, const std::string& path) const;
  bool boolean(const YAML::Node& node, const std::string& path) const;
  std::string string(const YAML::Node& node, const std::string& path) const;
  std::string choice(const YAML::Node& node, const std::string& path,
                     const std::vector<std::string>& allowed) const;
  std::vector<double> number_list(const YAML::Node& node, const std::string& path) const;
  std::vector<int64_t> integer_list(const YAML::Node& node, const std::string& path) const;

  // Fails with "'path' <rule>, got '<value>'" unless ok.
  void require(bool ok, const YAML::Node& node, const std::string& path, const std::string& rule) const;
  [[noreturn]] void fail(const std::string& path, const std::string& msg) const { origin_.fail(path, msg); }

 private:
  const std::string& scalar(const YAML::Node& node, const std::string& path, const char* what) const;
  const ConfigOrigin& origin_;
};

}  // namespace dynamix
