// One stage's memory inside its ops (stage_memory.h): a split backward's moved bytes.
#include "stage_memory.h"

namespace pipeprof::sim {

void resolveSplitBytes(const SlotLayout& layout, const LayerCostTable& table, std::size_t first, std::size_t end,
                       std::size_t inputUser, std::int32_t j, bool sharesInput, bool sharesOutputGradient,
                       Bytes* bytes) {
  auto weightSavedOf = [&](std::size_t l) { return table.weightSavedPrefix[l + 1] - table.weightSavedPrefix[l]; };
  const Bytes saved = bytes[layout.saved(j)];
  const bool receivesOutputGradient = j + 1 < layout.n;
  Bytes weightSaved = table.weightSavedPrefix[end] - table.weightSavedPrefix[first];
  Bytes heldGradient = 0;
  Bytes inputHeld = 0;
  Bytes inputCopyHeld = 0;
  if (j == 0) {
    // No input of the first stage wants a gradient: I computes nothing and W runs the whole
    // backward, from the graph and the output's gradient as they are.
    weightSaved = saved;
    if (receivesOutputGradient) heldGradient = table.outputBytes[end - 1];
  } else {
    if (receivesOutputGradient) heldGradient = table.outputGradientKeptBytes[end - 1];
    weightSaved -= heldGradient;
    // The input, as far as the W of the layer that takes it keeps it: j - 1's output itself, or
    // the buffer it was copied into.
    const Bytes inputKept =
        std::clamp<Bytes>(weightSavedOf(inputUser) - table.inputKeptBytes[inputUser], 0, table.outputBytes[first - 1]);
    (sharesInput ? inputHeld : inputCopyHeld) = inputKept;
    weightSaved = std::max<Bytes>(0, weightSaved - inputKept);
  }
  bytes[layout.weightSaved(j)] = weightSaved;
  bytes[layout.savedFreedByInput(j)] = std::max<Bytes>(0, saved - weightSaved);
  bytes[layout.weightSavedGrowth(j)] = std::max<Bytes>(0, weightSaved - saved);
  bytes[layout.gradientHeldOnSender(j)] = sharesOutputGradient ? heldGradient : 0;
  bytes[layout.gradientHeldOnReceiver(j)] = sharesOutputGradient ? 0 : heldGradient;
  bytes[layout.inputHeldForWeight(j)] = inputHeld;
  bytes[layout.inputCopyHeldForWeight(j)] = inputCopyHeld;
  // Not checkpointed, j - 1 frees that input with its I, or the first stage with its W where
  // its last layer saved its output (its W keeps the whole graph).
  const bool freedByWeight = j == 1 && table.outputSavedBytes[first - 1] >= table.outputBytes[first - 1];
  bytes[layout.outputHeldAfterInput(j)] = freedByWeight ? 0 : inputHeld;
  bytes[layout.outputHeldAfterWeight(j)] = freedByWeight ? inputHeld : 0;
  if (j > 0) {
    bytes[layout.checkpointedInputFreedByInput(j)] = std::max<Bytes>(0, bytes[layout.output(j - 1)] - inputHeld);
  }
  // W runs its layers last first, each letting go of the forward's tensors it kept (its
  // weight_saved_bytes less the gradients I captured, which stay until W ends): a layer's
  // workspace stands on what the later layers have freed by then.
  Bytes freedByLater = 0;
  Bytes weightPeak = 0;
  for (std::size_t l = end; l-- > first;) {
    weightPeak = std::max(weightPeak, table.weightWorkspaceBytes[l] - freedByLater);
    freedByLater += std::max<Bytes>(0, weightSavedOf(l) - table.inputKeptBytes[l]);
  }
  bytes[layout.weightBackwardPeak(j)] = weightPeak;
}

}  // namespace pipeprof::sim
