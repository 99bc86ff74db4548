#!/usr/bin/python3
"""Models scripted as their authors wrote them: their steps against the same model hand-flattened, and their sweeps.

Two models nobody rewrote for pipeprof (docs/runtime.md, "Bringing a model"), each scripted
whole with torch.jit.script, run with Debian's python3-torch and python3-torchvision (this
script under /usr/bin/python3, whose torch matches LibTorch 1.13):

- resnet50: torchvision.models.resnet50(num_classes=100) as it is (its forward calls
  _forward_impl; layer1..layer4 are Sequentials of Bottlenecks), 3x64x64 images, batch 16;
- gpt: a nanoGPT-style language model: token and position embeddings added in forward, a
  ModuleList of 8 pre-norm blocks (width 256, 4 heads, causal mask built in each attention),
  a final LayerNorm and a head tied to the token embedding; 64 tokens of 1000, batch 16;
- unet: a U-Net written as the common PyTorch implementations write it (DoubleConv, Down and
  Up modules; each Up called with the decoder's tensor and an encoder output from one to four
  levels up, which it concatenates), 3x64x64 images to a 3-channel map, MSE; batch 16. It has
  no hand-flattened twin: --speed skips it.

Each is also hand-flattened into an nn.Sequential subclass with the same layers where a stage
may begin (the glue of the graph -- adding positions, the flatten -- inside small modules), so

    --speed:  pipeprof run --model OUT/M.pt         --devices cpu,cpu --split-at SPLIT ...
              pipeprof run --model OUT/M-flat.pt    --devices cpu,cpu --balance BALANCE ...
              alternated --repeats times, the same stages on both; prints each one's median step
              and the graph's over the flattened one's, per repeat and their median;
    --sweep:  pipeprof sweep --model OUT/M.pt --devices cpu,cpu --batch 16 SWEEP_FLAGS -o OUT/M/report.json
              and the step MAPE after the drift factor (before it), the peak MAPE and the worst device.

    /usr/bin/python3 bench/graph_models.py --pipeprof build/cli/pipeprof --out /tmp/graph --speed --sweep
"""
import argparse
import json
import math
import os
import statistics
import subprocess

from imported_models import torch_modules
from training_step_sweeps import SWEEP_FLAGS, errors

BATCH = 16
# Where the second stage begins: the graph model's module path, the flattened model's balance.
SPLITS = {"resnet50": ("layer3.0", "11,11"), "gpt": ("h.4", "5,6")}
MODELS = ["resnet50", "gpt", "unet"]
RUN_FLAGS = "--batch 16 --chunks 4 --schedule 1f1b --warmup 3 --steps 20 --threads 1 --json"


def build(name, out):
    """Writes OUT/NAME.pt (as written) and OUT/NAME-flat.pt (hand-flattened, the same layers)."""
    torch, torchvision, Net = torch_modules()
    from torch import nn
    from torch.nn import functional as F

    torch.manual_seed(0)
    if name == "resnet50":
        model = torchvision.models.resnet50(num_classes=100)

        class PoolFlatten(nn.Module):
            def __init__(self, pool):
                super().__init__()
                self.pool = pool

            def forward(self, x):
                return torch.flatten(self.pool(x), 1)

        m = model
        flat = Net(m.conv1, m.bn1, m.relu, m.maxpool, *m.layer1, *m.layer2, *m.layer3, *m.layer4,
                   PoolFlatten(m.avgpool), m.fc)
        for each in (model, flat):
            each.pipeprof_input_shape = [3, 64, 64]
            each.pipeprof_loss = "cross_entropy"
            each.pipeprof_num_classes = 100
    elif name == "unet":
        model, flat = unet(torch, nn, F), None
        model.pipeprof_input_shape = [3, 64, 64]
        model.pipeprof_loss = "mse"
    elif name == "gpt":
        model, flat = gpt(torch, nn, F, Net)
        for each in (model, flat):
            each.pipeprof_input_shape = [64]
            each.pipeprof_input_dtype = "long"
            each.pipeprof_vocab_size = 1000
            each.pipeprof_loss = "next_token"
    else:
        raise SystemExit("unknown model " + name)
    os.makedirs(out, exist_ok=True)
    torch.jit.script(model).save(os.path.join(out, name + ".pt"))
    if flat is not None:
        torch.jit.script(flat).save(os.path.join(out, name + "-flat.pt"))


def unet(torch, nn, F, width=16):
    """A U-Net as Pytorch-UNet writes it: inc, down1-down4, up1-up4 (each taking a skip), outc."""

    class DoubleConv(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.double_conv = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(inplace=True),
                                             nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU(inplace=True))

        def forward(self, x):
            return self.double_conv(x)

    class Down(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.maxpool_conv = nn.Sequential(nn.MaxPool2d(2), DoubleConv(cin, cout))

        def forward(self, x):
            return self.maxpool_conv(x)

    class Up(nn.Module):
        def __init__(self, cin, cout):
            super().__init__()
            self.up = nn.ConvTranspose2d(cin, cin // 2, 2, stride=2)
            self.conv = DoubleConv(cin, cout)

        def forward(self, x1, x2):
            return self.conv(torch.cat([x2, self.up(x1)], dim=1))

    class UNet(nn.Module):
        def __init__(self):
            super().__init__()
            w = width
            self.inc = DoubleConv(3, w)
            self.down1, self.down2 = Down(w, 2 * w), Down(2 * w, 4 * w)
            self.down3, self.down4 = Down(4 * w, 8 * w), Down(8 * w, 16 * w)
            self.up1, self.up2 = Up(16 * w, 8 * w), Up(8 * w, 4 * w)
            self.up3, self.up4 = Up(4 * w, 2 * w), Up(2 * w, w)
            self.outc = nn.Conv2d(w, 3, 1)

        def forward(self, x):
            x1 = self.inc(x)
            x2 = self.down1(x1)
            x3 = self.down2(x2)
            x4 = self.down3(x3)
            x5 = self.down4(x4)
            x = self.up1(x5, x4)
            x = self.up2(x, x3)
            x = self.up3(x, x2)
            x = self.up4(x, x1)
            return self.outc(x)

    return UNet()


def gpt(torch, nn, F, Net, vocab=1000, tokens=64, depth=8, heads=4, width=256):
    """(the nanoGPT-style model, its hand-flattened Sequential: embeddings, blocks, norm, tied head)."""

    class CausalSelfAttention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(width, 3 * width)
            self.c_proj = nn.Linear(width, width)
            self.n_embd = width
            self.n_head = heads

        def forward(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
            q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = F.softmax(att.masked_fill(~mask, float("-inf")), dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(width)
            self.attn = CausalSelfAttention()
            self.ln_2 = nn.LayerNorm(width)
            self.c_fc = nn.Linear(width, 4 * width)
            self.c_proj = nn.Linear(4 * width, width)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(vocab, width)
            self.wpe = nn.Embedding(tokens, width)
            self.h = nn.ModuleList([Block() for _ in range(depth)])
            self.ln_f = nn.LayerNorm(width)
            self.lm_head = nn.Linear(width, vocab, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx):
            b, t = idx.size()
            pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
            x = self.wte(idx) + self.wpe(pos)
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    class Embeddings(nn.Module):
        """The graph's first two layers (wte, wpe and the addition) as one."""

        def __init__(self, model):
            super().__init__()
            self.wte = model.wte
            self.wpe = model.wpe

        def forward(self, idx):
            pos = torch.arange(0, idx.size(1), dtype=torch.long, device=idx.device)
            return self.wte(idx) + self.wpe(pos)

    model = GPT()
    # Embeddings, h.0-h.7, ln_f, lm_head: 11 layers; the graph has 12 (wte and wpe apart), so
    # the graph's --split-at h.4 (6 layers before) is the flattened --balance 5,6.
    return model, Net(Embeddings(model), *model.h, model.ln_f, model.lm_head)


def median_step(pipeprof, flags):
    done = subprocess.run([pipeprof, "run"] + flags.split(), capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pipeprof run {flags} failed:\n{done.stdout}{done.stderr}")
    report = json.loads(done.stdout[done.stdout.find("\n{") + 1:])
    return report["step_ns_median"] / 1e6


def speed(pipeprof, out, name, repeats):
    split, balance = SPLITS[name]
    ratios = []
    for repeat in range(repeats):
        graph = median_step(pipeprof, f"--model {out}/{name}.pt --devices cpu,cpu --split-at {split} {RUN_FLAGS}")
        flat = median_step(pipeprof, f"--model {out}/{name}-flat.pt --devices cpu,cpu --balance {balance} {RUN_FLAGS}")
        ratios.append(graph / flat)
        print(f"{name} repeat {repeat + 1}: graph {graph:.1f} ms, flattened {flat:.1f} ms, ratio {graph / flat:.3f}",
              flush=True)
    print(f"| {name} | `--split-at {split}` / `--balance {balance}` | {statistics.median(ratios):.3f} "
          f"({min(ratios):.3f}-{max(ratios):.3f}, {repeats} pairs) |")


def sweep(pipeprof, out, name):
    report_path = os.path.join(out, name, "report.json")
    command = [pipeprof, "sweep", "--model", os.path.join(out, name + ".pt"), "--batch", str(BATCH),
               "--devices", "cpu,cpu"] + SWEEP_FLAGS + ["-o", report_path]
    print(" ".join(command), flush=True)
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    with open(report_path) as f:
        report = json.load(f)
    measured, step, before, peak, worst = errors(report)
    layers = len(report["profile"]["layers"]) if "profile" in report else "?"
    print(f"| {name} (as written, {layers} layers) | {measured} | {step:.1f}% ({before:.1f}%) | {peak:.1f}% | {worst:.1f}% |")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--out", default="graph-models")
    parser.add_argument("--models", nargs="+", default=MODELS, choices=MODELS)
    parser.add_argument("--speed", action="store_true", help="graph against hand-flattened, alternated")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sweep", action="store_true", help="sweep each model as written")
    args = parser.parse_args()
    if not (args.speed or args.sweep):
        parser.error("give --speed, --sweep or both")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    for name in args.models:
        build(name, args.out)
        if args.speed and name in SPLITS:
            speed(args.pipeprof, args.out, name, args.repeats)
        if args.sweep:
            sweep(args.pipeprof, args.out, name)


if __name__ == "__main__":
    main()
