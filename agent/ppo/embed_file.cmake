# Writes OUT: a C++ source defining default_policy_archive() with the bytes of IN (empty if absent).
if(EXISTS "${IN}")
  file(READ "${IN}" hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${hex}")
  file(SIZE "${IN}" size)
else()
  set(bytes "")
  set(size 0)
endif()
file(WRITE "${OUT}.tmp" "// Generated from agent/ppo/default_policy.pt by embed_file.cmake; do not edit.\n"
  "#include \"agent/ppo/default_policy.h\"\n"
  "namespace dynamix {\nnamespace {\nconst char kBytes[] = {${bytes} 0};\n}  // namespace\n"
  "std::string default_policy_archive() { return std::string(kBytes, ${size}); }\n}  // namespace dynamix\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
