// The measurers' tests' model and candidate: a 3-layer mlp in two stages, small enough to train
// in milliseconds.
#pragma once

#include <pipeprof/core/candidate.h>
#include <pipeprof/runtime/models.h>

namespace pipeprof::test {

/// mlp --width 16 --depth 2 (fc0 relu0 fc1) on one intra-op thread.
inline ModelSpec tinyMlp() {
  ModelSpec model;
  model.name = "mlp";
  model.options.width = 16;
  model.options.depth = 2;
  model.threads = 1;
  return model;
}

/// tinyMlp as [2, 1], 2 micro-batches of 4 samples.
inline Candidate tinyCandidate() {
  Candidate candidate;
  candidate.balance = {2, 1};
  candidate.chunks = 2;
  candidate.batch = 8;
  return candidate;
}

}  // namespace pipeprof::test
