#!/usr/bin/python3
"""The reference Python Pipe on CPU: torch.distributed.pipeline.sync.Pipe (Debian's python3-torch 1.13).

Times one training step (forward, MSE loss, backward) of a 4-layer 512-wide MLP
(Linear/ReLU x3 + Linear: 7 modules), batch 256, chunks 8, on CPU, against the plain
nn.Sequential, and prints the median milliseconds of each and their ratio. On CPU the reference
puts every top-level child in its own partition and runs all of them on one thread; --partitions 2
groups the children into two halves instead. bench_runtime's referenceMlp benchmarks are the
same step in pipeprof's Pipe.

    /usr/bin/python3 bench/pipe_reference.py [--partitions 7|2] [--checkpoint except_last] [--threads 1]
"""
import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.distributed.rpc as rpc
from torch import nn
from torch.distributed.pipeline.sync import Pipe


def mlp(width: int, layers: int) -> nn.Sequential:
    torch.manual_seed(0)
    modules = []
    for k in range(layers):
        modules.append(nn.Linear(width, width))
        if k + 1 < layers:
            modules.append(nn.ReLU())
    return nn.Sequential(*modules)


def time_steps(step, warmup: int, runs: int) -> list:
    for _ in range(warmup):
        step()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        step()
        times.append((time.perf_counter() - start) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--chunks", type=int, default=8)
    parser.add_argument("--checkpoint", default="except_last", choices=["always", "except_last", "never"])
    parser.add_argument("--partitions", type=int, default=0, help="0: every child its own partition")
    parser.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as tmp:
        rpc.init_rpc("worker", rank=0, world_size=1,
                     rpc_backend_options=rpc.TensorPipeRpcBackendOptions(init_method="file://" + os.path.join(tmp, "rpc")))
        x = torch.randn(args.batch, args.width)
        target = torch.randn(args.batch, args.width)

        plain = mlp(args.width, args.layers)

        def plain_step():
            plain.zero_grad(set_to_none=True)
            nn.functional.mse_loss(plain(x), target).backward()

        model = mlp(args.width, args.layers)
        if args.partitions > 0:
            children = list(model.children())
            size = -(-len(children) // args.partitions)
            model = nn.Sequential(*[nn.Sequential(*children[k:k + size]) for k in range(0, len(children), size)])
        pipe = Pipe(model, chunks=args.chunks, checkpoint=args.checkpoint)

        def pipe_step():
            pipe.zero_grad(set_to_none=True)
            nn.functional.mse_loss(pipe(x).local_value(), target).backward()

        plain_ms = statistics.median(time_steps(plain_step, 3, args.runs))
        pipe_ms = statistics.median(time_steps(pipe_step, 3, args.runs))
        partitions = len(list(pipe.partitions))
        print(f"plain nn.Sequential: {plain_ms:.2f} ms/step")
        print(f"torch Pipe ({partitions} partitions, chunks {args.chunks}, {args.checkpoint}): {pipe_ms:.2f} ms/step")
        print(f"ratio pipe/plain: {pipe_ms / plain_ms:.2f}")
        rpc.shutdown()


if __name__ == "__main__":
    main()
