// DYNAMIX — typed, path-aware reads from a yaml-cpp tree (see yaml_reader.h).
#include "framework/core/yaml_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <set>
#include <sstream>

#include "framework/core/error.h"

namespace dynamix {
namespace {

// Not `quoted`: where <iomanip> is visible (a unity batch), argument lookup would find std::quoted.
std::string single_quoted(const std::string& s) { return "'" + s + "'"; }

// How a value reads in an error message: 'abc', null, a list, a mapping.
std::string describe_node(const YAML::Node& n) {
  if (!n.IsDefined() || n.IsNull()) return "null";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return single_quoted(n.Scalar());
}

// Quoted ('x', "x") or !!str scalars are strings in YAML, never numbers or booleans.
bool is_string_scalar(const YAML::Node& n) {
  return n.IsScalar() && (n.Tag() == "!" || n.Tag() == "tag:yaml.org,2002:str");
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// True when `a` is `b` or a key below it ("a.b", "a[0]").
bool is_within(const std::string& a, const std::string& b) {
  return a == b || starts_with(a, b + ".") || starts_with(a, b + "[");
}

std::string trim(const std::string& s) {
  const auto first = s.find_first_not_of(" \t");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t") - first + 1);
}

std::string join_names(const std::vector<std::string>& names, const char* sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? sep : "") + names[i];
  return out;
}

// Offset of the first byte that is not part of well-formed UTF-8 (RFC 3629), or npos.
size_t invalid_utf8_at(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    // Sequence length, and the second byte's range that excludes overlong forms, UTF-16
    // surrogates and code points above U+10FFFF.
    size_t len = 1;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0x80) {
      if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
      } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
      } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
      } else {
        return i;
      }
    }
    if (i + len > s.size()) return i;
    for (size_t k = 1; k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) return i;
    }
    i += len;
  }
  return std::string::npos;
}

// yaml-cpp reads any bytes, but its emitter replaces invalid UTF-8, so the saved config.yaml
// would name other paths than the run used. YAML text is UTF-8 (found by fuzz_config).
void check_utf8(const std::string& text, const std::string& origin) {
  const size_t bad = invalid_utf8_at(text);
  if (bad == std::string::npos) return;
  const size_t line = std::count(text.begin(), text.begin() + bad, '\n') + 1;
  const size_t newline = text.rfind('\n', bad);
  const size_t column = bad - (newline == std::string::npos ? 0 : newline + 1) + 1;
  char byte[8];
  std::snprintf(byte, sizeof(byte), "0x%02x", static_cast<unsigned char>(text[bad]));
  throw Error(origin + ":" + std::to_string(line) + ":" + std::to_string(column) +
              ": not valid UTF-8 (byte " + byte + "); YAML text must be UTF-8");
}

}  // namespace

std::string join_key(const std::string& parent, const std::string& key) {
  return parent.empty() ? key : parent + "." + key;
}

void ConfigOrigin::add_override(const std::string& key, const std::string& text) {
  overrides_.emplace_back(key, text);
}

std::string ConfigOrigin::describe(const std::vector<std::string>& paths) const {
  for (auto it = overrides_.rbegin(); it != overrides_.rend(); ++it) {
    for (const auto& path : paths) {
      // The override set this key, a parent of it, or a child that made the parent ill-typed.
      if (is_within(path, it->first) || is_within(it->first, path)) {
        return file_ + " (override " + single_quoted(it->second) + ")";
      }
    }
  }
  return file_;
}

void ConfigOrigin::fail_keys(const std::vector<std::string>& paths, const std::string& msg) const {
  throw Error(describe(paths) + ": " + msg);
}

YAML::Node load_yaml_text(const std::string& text, const std::string& origin) {
  check_utf8(text, origin);
  try {
    return YAML::Load(text);
  } catch (const YAML::ParserException& e) {
    std::ostringstream os;
    os << origin << ":" << e.mark.line + 1 << ":" << e.mark.column + 1 << ": YAML syntax error: " << e.msg;
    throw Error(os.str());
  } catch (const YAML::Exception& e) {
    throw Error(origin + ": YAML error: " + e.what());
  }
}

void check_no_control_characters(const YAML::Node& node, const std::string& path,
                                 const ConfigOrigin& origin) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string();
      check_no_control_characters(kv.first, join_key(path, key), origin);
      check_no_control_characters(kv.second, join_key(path, key), origin);
    }
  } else if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) {
      check_no_control_characters(node[i], path + "[" + std::to_string(i) + "]", origin);
    }
  } else if (node.IsScalar()) {
    const std::string& s = node.Scalar();
    for (size_t i = 0; i < s.size(); ++i) {
      const auto c = static_cast<unsigned char>(s[i]);
      if (c >= 0x20 && c != 0x7f) continue;
      char byte[8];
      std::snprintf(byte, sizeof(byte), "0x%02x", c);
      origin.fail(path, single_quoted(path) + " must not contain control characters, got byte " + byte +
                            " at offset " + std::to_string(i) + " of " + single_quoted(s.substr(0, i)) +
                            "...");
    }
  }
}

void apply_override(YAML::Node& root, const std::string& override_text, ConfigOrigin& origin) {
  check_utf8(override_text, origin.file() + ": override");
  const auto eq = override_text.find('=');
  const std::string key = eq == std::string::npos ? "" : trim(override_text.substr(0, eq));
  std::vector<std::string> parts;
  for (size_t start = 0; !key.empty();) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  const bool empty_part = std::any_of(parts.begin(), parts.end(), [](const auto& p) { return p.empty(); });
  if (parts.empty() || empty_part) {
    throw Error(origin.file() + ": malformed override " + single_quoted(override_text) +
                ": expected key.sub=value, e.g. train.lr=0.1");
  }
  const YAML::Node value = load_yaml_text(override_text.substr(eq + 1),
                                          origin.file() + ": override " + single_quoted(override_text));

  YAML::Node node = root;
  std::string path;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    path = join_key(path, parts[i]);
    const YAML::Node child = node[parts[i]];
    if (!child.IsDefined() || child.IsNull()) {
      node[parts[i]] = YAML::Node(YAML::NodeType::Map);
    } else if (!child.IsMap()) {
      throw Error(origin.file() + ": override " + single_quoted(override_text) + ": " + single_quoted(path) +
                  " is a value, not a section with sub-keys");
    }
    node.reset(node[parts[i]]);  // rebind (operator= would overwrite the node's content)
  }
  node[parts.back()] = value;
  origin.add_override(key, override_text);
}

namespace {
// Like `out << node`, but quoted scalars stay quoted ('123' must not come back as a number) and
// flow lists stay on one line.
void emit_node(YAML::Emitter& out, const YAML::Node& n) {
  if (n.IsMap() || n.IsSequence()) {
    if (n.Style() == YAML::EmitterStyle::Flow) out << YAML::Flow;
  }
  if (n.IsMap()) {
    out << YAML::BeginMap;
    for (const auto& kv : n) {
      out << YAML::Key;
      emit_node(out, kv.first);
      out << YAML::Value;
      emit_node(out, kv.second);
    }
    out << YAML::EndMap;
  } else if (n.IsSequence()) {
    out << YAML::BeginSeq;
    for (const auto& e : n) emit_node(out, e);
    out << YAML::EndSeq;
  } else if (n.IsScalar()) {
    if (is_string_scalar(n)) out << YAML::DoubleQuoted;
    out << n.Scalar();
  } else {
    out << YAML::Null;
  }
}
}  // namespace

std::string emit_yaml(const YAML::Node& node) {
  YAML::Emitter out;
  emit_node(out, node);
  return std::string(out.c_str()) + "\n";
}

void YamlReader::section(const YAML::Node& node, const std::string& path,
                         const std::vector<Field>& fields) const {
  if (node.IsNull()) return;  // `train:` with nothing below keeps the defaults
  if (!node.IsMap()) {
    fail(path, (path.empty() ? std::string("the top level") : single_quoted(path)) +
                   " must be a mapping of keys, got " + describe_node(node));
  }
  std::set<std::string> seen;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) fail(path, "keys in " + single_quoted(path) + " must be plain names");
    const std::string full = join_key(path, kv.first.Scalar());
    const auto field = std::find_if(fields.begin(), fields.end(),
                                    [&](const Field& f) { return kv.first.Scalar() == f.key; });
    if (field == fields.end()) {
      std::vector<std::string> allowed;
      for (const auto& f : fields) allowed.emplace_back(f.key);
      fail(full, "unknown key " + single_quoted(full) + " (allowed " +
                     (path.empty() ? std::string("at the top level") : "in " + single_quoted(path)) + ": " +
                     join_names(allowed, ", ") + ")");
    }
    if (!seen.insert(field->key).second) fail(full, "duplicate key " + single_quoted(full));
    field->set(kv.second, full);
  }
}

void YamlReader::list(const YAML::Node& node, const std::string& path, const Setter& each) const {
  if (!node.IsSequence()) fail(path, single_quoted(path) + " must be a list, got " + describe_node(node));
  for (size_t i = 0; i < node.size(); ++i) each(node[i], path + "[" + std::to_string(i) + "]");
}

const std::string& YamlReader::scalar(const YAML::Node& node, const std::string& path,
                                      const char* what) const {
  if (!node.IsScalar() || is_string_scalar(node)) {
    fail(path, single_quoted(path) + " must be " + what + ", got " + (node.IsScalar() ? "the string " : "") +
                   describe_node(node));
  }
  return node.Scalar();
}

int64_t YamlReader::integer(const YAML::Node& node, const std::string& path) const {
  const std::string& s = scalar(node, path, "an integer");
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), value);
  if (ec == std::errc::result_out_of_range)
    fail(path, single_quoted(path) + " is out of range, got " + single_quoted(s));
  if (ec != std::errc() || end != s.data() + s.size() || begin == end) {
    fail(path, single_quoted(path) + " must be an integer, got " + single_quoted(s));
  }
  return value;
}

int32_t YamlReader::int32(const YAML::Node& node, const std::string& path) const {
  const int64_t v = integer(node, path);
  require(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(), node, path,
          "must fit in 32 bits");
  return static_cast<int32_t>(v);
}

uint64_t YamlReader::unsigned_integer(const YAML::Node& node, const std::string& path) const {
  const std::string& s = scalar(node, path, "a non-negative integer");
  const char* begin = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(begin, s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size() || begin == end) {
    fail(path, single_quoted(path) + " must be a non-negative 64-bit integer, got " + single_quoted(s));
  }
  return value;
}

double YamlReader::number(const YAML::Node& node, const std::string& path) const {
  const std::string& s = scalar(node, path, "a number");
  // Decimal notation only: strtod alone would also take hex, "inf" and "nan".
  const bool decimal = !s.empty() && s.find_first_not_of("0123456789+-.eE") == std::string::npos;
  char* end = nullptr;
  const double value = decimal ? std::strtod(s.c_str(), &end) : 0.0;
  if (!decimal || end != s.c_str() + s.size() || !std::isfinite(value)) {
    fail(path, single_quoted(path) + " must be a finite number, got " + single_quoted(s));
  }
  return value;
}

bool YamlReader::boolean(const YAML::Node& node, const std::string& path) const {
  const std::string& s = scalar(node, path, "true or false");
  if (s != "true" && s != "false")
    fail(path, single_quoted(path) + " must be true or false, got " + single_quoted(s));
  return s == "true";
}

std::string YamlReader::string(const YAML::Node& node, const std::string& path) const {
  if (!node.IsScalar()) fail(path, single_quoted(path) + " must be a string, got " + describe_node(node));
  return node.Scalar();
}

std::string YamlReader::choice(const YAML::Node& node, const std::string& path,
                               const std::vector<std::string>& allowed) const {
  std::string s = string(node, path);
  if (std::find(allowed.begin(), allowed.end(), s) == allowed.end()) {
    fail(path,
         single_quoted(path) + " must be one of " + join_names(allowed, "|") + ", got " + single_quoted(s));
  }
  return s;
}

std::vector<double> YamlReader::number_list(const YAML::Node& node, const std::string& path) const {
  std::vector<double> out;
  list(node, path, [&](const YAML::Node& v, const std::string& p) { out.push_back(number(v, p)); });
  return out;
}

std::vector<int64_t> YamlReader::integer_list(const YAML::Node& node, const std::string& path) const {
  std::vector<int64_t> out;
  list(node, path, [&](const YAML::Node& v, const std::string& p) { out.push_back(integer(v, p)); });
  return out;
}

void YamlReader::require(bool ok, const YAML::Node& node, const std::string& path,
                         const std::string& rule) const {
  if (!ok) fail(path, single_quoted(path) + " " + rule + ", got " + describe_node(node));
}

}  // namespace dynamix
