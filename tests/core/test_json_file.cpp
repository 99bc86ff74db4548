// Tests for json_file.cpp: FormatError text, atomic writes, reads and JsonCursor messages.
#include <pipeprof/core/json_file.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace pipeprof {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;
using ::testing::StrEq;
using ::testing::ThrowsMessage;

/// A directory of the test's own, removed with everything in it when the test ends.
struct ScratchDir {
  explicit ScratchDir(const std::string& name)
      : path(::testing::TempDir() + "pipeprof_core_json_" + name + "_" + std::to_string(::getpid())) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~ScratchDir() { std::filesystem::remove_all(path); }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  std::string path;
};

std::vector<std::string> listDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* handle = ::opendir(dir.c_str());
  if (handle == nullptr) return names;
  while (dirent* entry = ::readdir(handle)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  ::closedir(handle);
  return names;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream content;
  content << in.rdbuf();
  return content.str();
}

TEST(FormatError, MessageNamesFilePathAndProblem) {
  FormatError error("profile.json", "$.layers[3].costs[0].forward_ns", "expected a non-negative integer, got -5");
  EXPECT_STREQ(error.what(), "profile.json: $.layers[3].costs[0].forward_ns: expected a non-negative integer, got -5");
  EXPECT_EQ(error.file(), "profile.json");
  EXPECT_EQ(error.jsonPath(), "$.layers[3].costs[0].forward_ns");
  EXPECT_STREQ(FormatError("a.json", "", "cannot open file").what(), "a.json: cannot open file");
}

TEST(WriteFileAtomically, WritesAndReplacesLeavingNoTemporaryFiles) {
  const ScratchDir scratch("write");
  const std::string& dir = scratch.path;
  std::string path = dir + "/out.json";
  writeFileAtomically(path, "{\"a\": 1}");
  EXPECT_EQ(slurp(path), "{\"a\": 1}");
  writeFileAtomically(path, "[2]");
  EXPECT_EQ(slurp(path), "[2]");
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"out.json"});
  EXPECT_EQ(readJsonFile(path), nlohmann::json::array({2}));
}

TEST(WriteFileAtomically, FailureNamesThePathAndLeavesNothing) {
  const ScratchDir scratch("fail");
  const std::string& dir = scratch.path;
  std::string path = dir + "/missing_dir/out.json";
  EXPECT_THAT([&] { writeFileAtomically(path, "x"); },
              ThrowsMessage<std::runtime_error>(StartsWith("cannot write '" + path + "'")));
  // A directory in the way: the rename fails and the temporary file is removed.
  std::string blocked = dir + "/blocked";
  ::mkdir(blocked.c_str(), 0755);
  ::mkdir((blocked + "/child").c_str(), 0755);
  EXPECT_THAT([&] { writeFileAtomically(blocked, "x"); },
              ThrowsMessage<std::runtime_error>(HasSubstr("cannot write '" + blocked + "': rename failed")));
  EXPECT_EQ(listDir(dir), std::vector<std::string>{"blocked"});
}

TEST(ReadJsonFile, UnreadableAndInvalidFiles) {
  const ScratchDir scratch("read");
  const std::string& dir = scratch.path;
  EXPECT_THAT([&] { readJsonFile(dir + "/nope.json"); },
              ThrowsMessage<FormatError>(StrEq(dir + "/nope.json: cannot open file: No such file or directory")));
  std::string bad = dir + "/bad.json";
  writeFileAtomically(bad, "{\"a\": [1, 2,]}");
  EXPECT_THAT([&] { readJsonFile(bad); },
              ThrowsMessage<FormatError>(AllOf(StartsWith(bad + ": invalid JSON: parse error at line 1, column 13"),
                                               HasSubstr("syntax error"))));
  std::string huge = dir + "/huge.json";
  writeFileAtomically(huge, "{\"a\": 1e999}");
  EXPECT_THAT([&] { readJsonFile(huge); },
              ThrowsMessage<FormatError>(StrEq(huge + ": invalid JSON: number overflow parsing '1e999'")));
}

TEST(JsonCursor, PathsAndMessages) {
  nlohmann::json json = nlohmann::json::parse(R"J({"layers": [{"costs": [{"forward_ns": -5, "name": 3}]}],
                                                 "flag": "yes", "size": 1.5, "count": 0})J");
  JsonCursor root(json, "profile.json");
  JsonCursor cost = root.at("layers").at(0).at("costs").at(0);
  EXPECT_EQ(cost.path(), "$.layers[0].costs[0]");
  EXPECT_THAT([&] { cost.at("forward_ns").asNonNegativeInt(); },
              ThrowsMessage<FormatError>(
                  StrEq("profile.json: $.layers[0].costs[0].forward_ns: expected a non-negative integer, got -5")));
  EXPECT_EQ(cost.at("forward_ns").asInt(), -5);
  EXPECT_THAT(
      [&] { cost.at("param_bytes"); },
      ThrowsMessage<FormatError>(StrEq("profile.json: $.layers[0].costs[0]: missing required field 'param_bytes'")));
  EXPECT_THAT([&] { cost.at("name").asString(); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.layers[0].costs[0].name: expected a string, got 3")));
  EXPECT_THAT([&] { root.at("flag").asBool(); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.flag: expected true or false, got \"yes\"")));
  EXPECT_THAT([&] { root.at("size").asInt(); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.size: expected an integer, got 1.5")));
  EXPECT_THAT([&] { root.at("count").asPositiveInt(); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.count: expected a positive integer, got 0")));
  EXPECT_THAT([&] { root.at("flag").asNumber(); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.flag: expected a number, got \"yes\"")));
  EXPECT_THAT([&] { root.at("layers").at(4); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.layers: expected at least 5 elements, got 1")));
  EXPECT_THAT([&] { root.at("flag").size(); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.flag: expected an array, got a string")));
  EXPECT_THAT([&] { root.at("layers").at("x"); },
              ThrowsMessage<FormatError>(StrEq("profile.json: $.layers: expected an object, got an array")));
  EXPECT_DOUBLE_EQ(root.at("size").asNonNegativeNumber(), 1.5);
  EXPECT_EQ(root.at("count").asNonNegativeInt(), 0);
  EXPECT_TRUE(root.has("flag"));
  EXPECT_FALSE(root.has("other"));
  EXPECT_EQ(root.at("layers").items().size(), 1u);
  EXPECT_THAT([&] { root.fail("custom"); }, ThrowsMessage<FormatError>(StrEq("profile.json: $: custom")));
}

TEST(JsonCursor, RequireSchema) {
  nlohmann::json foo = {{"schema", "foo"}};
  EXPECT_THAT([&] { JsonCursor(foo, "p.json").requireSchema("pipeprof.profile/v1"); },
              ThrowsMessage<FormatError>(StrEq("p.json: $.schema: expected schema 'pipeprof.profile/v1', got 'foo'")));
  nlohmann::json none = nlohmann::json::object();
  EXPECT_THAT([&] { JsonCursor(none, "p.json").requireSchema("pipeprof.profile/v1"); },
              ThrowsMessage<FormatError>(StrEq("p.json: $: missing required field 'schema'")));
  nlohmann::json ok = {{"schema", "pipeprof.profile/v1"}};
  EXPECT_NO_THROW(JsonCursor(ok, "p.json").requireSchema("pipeprof.profile/v1"));
}

}  // namespace
}  // namespace pipeprof
