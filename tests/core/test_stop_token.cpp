// Tests for stop_token.h: sources, tokens, copies, and a request from a signal handler.
#include <pipeprof/core/stop_token.h>

#include <gtest/gtest.h>

#include <csignal>
#include <thread>

namespace pipeprof {
namespace {

TEST(StopToken, ADefaultTokenNeverStops) {
  const StopToken token;
  EXPECT_FALSE(token.stopPossible());
  EXPECT_FALSE(token.stopRequested());
}

TEST(StopToken, EveryTokenAndCopySeesTheSourcesRequest) {
  StopSource source;
  const StopToken token = source.token();
  const StopToken copy = token;
  EXPECT_TRUE(token.stopPossible());
  EXPECT_FALSE(token.stopRequested());
  EXPECT_FALSE(source.stopRequested());
  source.requestStop();
  EXPECT_TRUE(token.stopRequested());
  EXPECT_TRUE(copy.stopRequested());
  EXPECT_TRUE(source.token().stopRequested());
  EXPECT_TRUE(source.stopRequested());
  EXPECT_FALSE(StopSource().token().stopRequested()) << "another source is not stopped";
}

TEST(StopToken, ATokenOutlivesItsSource) {
  StopToken token;
  {
    StopSource source;
    token = source.token();
    source.requestStop();
  }
  EXPECT_TRUE(token.stopRequested());
}

TEST(StopToken, ARequestFromAnotherThreadIsSeen) {
  StopSource source;
  const StopToken token = source.token();
  std::thread requester([&source] { source.requestStop(); });
  requester.join();
  EXPECT_TRUE(token.stopRequested());
}

StopSource* gSignalSource = nullptr;
extern "C" void requestStopOnSignal(int) { gSignalSource->requestStop(); }

TEST(StopToken, ASignalHandlerMayRequestStop) {
  StopSource source;
  gSignalSource = &source;
  const auto previous = std::signal(SIGUSR1, requestStopOnSignal);
  ASSERT_NE(previous, SIG_ERR);
  std::raise(SIGUSR1);
  std::signal(SIGUSR1, previous);
  EXPECT_TRUE(source.token().stopRequested());
}

}  // namespace
}  // namespace pipeprof
