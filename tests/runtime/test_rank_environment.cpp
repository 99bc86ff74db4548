// Tests of runtime/rank_environment: the torchrun variables, read and checked.
#include <pipeprof/runtime/rank_environment.h>

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>

namespace pipeprof {
namespace {

std::optional<RankEnvironment> read(const std::map<std::string, std::string>& variables) {
  return rankEnvironmentFrom([&](const std::string& name) -> std::optional<std::string> {
    const auto it = variables.find(name);
    if (it == variables.end()) return std::nullopt;
    return it->second;
  });
}

std::string errorOf(const std::map<std::string, std::string>& variables) {
  try {
    read(variables);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(RankEnvironment, ReadsTorchrunsVariables) {
  const std::optional<RankEnvironment> environment =
      read({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
            {"MASTER_ADDR", "node0"}, {"MASTER_PORT", "29400"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"}});
  ASSERT_TRUE(environment.has_value());
  EXPECT_EQ(environment->rank, 3);
  EXPECT_EQ(environment->worldSize, 4);
  EXPECT_EQ(environment->localRank, 1);
  EXPECT_EQ(environment->localWorldSize, 2);
  EXPECT_EQ(environment->masterAddr, "node0");
  EXPECT_EQ(environment->masterPort, 29400);
  EXPECT_TRUE(environment->externalStore);
}

TEST(RankEnvironment, DefaultsAndNotARank) {
  EXPECT_FALSE(read({}).has_value());
  const std::optional<RankEnvironment> environment = read({{"RANK", "0"}, {"WORLD_SIZE", "2"}});
  ASSERT_TRUE(environment.has_value());
  EXPECT_EQ(environment->localRank, 0);
  EXPECT_EQ(environment->localWorldSize, 0);  // the launcher did not say
  EXPECT_EQ(environment->masterAddr, "127.0.0.1");
  EXPECT_EQ(environment->masterPort, 29500);
  EXPECT_FALSE(environment->externalStore);
}

TEST(RankEnvironment, MalformedVariablesAreNamedWithTheirValue) {
  EXPECT_EQ(errorOf({{"RANK", "0"}}), "RANK is set but WORLD_SIZE is not: a launcher (torchrun) sets both, with "
                                      "MASTER_ADDR and MASTER_PORT");
  EXPECT_EQ(errorOf({{"RANK", "2"}, {"WORLD_SIZE", "2"}}), "RANK must be an integer in [0, 1], got '2'");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_WORLD_SIZE", "3"}}),
            "LOCAL_WORLD_SIZE must be an integer in [1, 2], got '3'");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "http"}}),
            "MASTER_PORT must be an integer in [1, 65535], got 'http'");
  EXPECT_EQ(errorOf({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", ""}}),
            "MASTER_ADDR is set but empty: give rank 0's host name or address");
}

}  // namespace
}  // namespace pipeprof
