// Uses the installed pipeprof: a schedule (core), a simulation (simulator) and a Pipe (runtime).
#include <pipeprof/core/schedule.h>
#include <pipeprof/runtime/pipe.h>
#include <pipeprof/simulator/simulator.h>

#include <cstdlib>
#include <iostream>

int main() {
  try {
    pipeprof::ScheduleSpec spec;
    spec.balance = {1, 1};
    spec.chunks = 2;
    pipeprof::Schedule schedule = pipeprof::Schedule::build(spec);
    if (schedule.label(schedule.ops().front()) != "forward(0,0)") {
      std::cerr << "unexpected first op " << schedule.label(schedule.ops().front()) << "\n";
      return EXIT_FAILURE;
    }

    pipeprof::Profile profile;
    pipeprof::LayerProfile layer;
    layer.name = "fc";
    layer.paramBytes = 40;
    layer.gradBytes = 40;
    pipeprof::CostSample cost;
    cost.microBatch = 2;
    cost.forwardNs = 1000;
    cost.backwardNs = 2000;
    cost.outputBytes = 16;
    layer.costs = {cost};
    profile.layers = {layer};
    pipeprof::Candidate candidate;
    candidate.balance = {1};
    candidate.chunks = 2;
    candidate.batch = 4;
    pipeprof::Cluster cluster = pipeprof::Cluster::uniform(1, std::nullopt, 0.0, 0, "cpu");
    pipeprof::SimulationResult simulated = pipeprof::simulate(profile, cluster, candidate);
    if (simulated.prediction.iterationNs <= 0) {
      std::cerr << "simulation predicted " << simulated.prediction.iterationNs << " ns\n";
      return EXIT_FAILURE;
    }

    torch::nn::Sequential model(torch::nn::Linear(4, 2));
    pipeprof::PipeOptions options;
    options.devices = {torch::Device(torch::kCPU)};
    options.chunks = 2;
    pipeprof::Pipe pipe(model, {1}, options);
    torch::Tensor output = pipe.forward(torch::ones({4, 4}));
    output.sum().backward();
    if (output.size(0) != 4 || output.size(1) != 2) {
      std::cerr << "unexpected output shape " << output.sizes() << "\n";
      return EXIT_FAILURE;
    }
    std::cout << "schedule ops: " << schedule.ops().size() << ", predicted step: "
              << simulated.prediction.iterationNs << " ns\npipeprof consumer ok\n";
    return EXIT_SUCCESS;
  } catch (const std::exception& error) {
    std::cerr << "pipeprof consumer failed: " << error.what() << "\n";
    return EXIT_FAILURE;
  }
}
