#!/usr/bin/python3
"""Flattens torchvision models into scripted Sequentials, sweeps each, and prints how well each sweep predicted.

Real models, brought the way users bring them (docs/runtime.md, "Bringing a model"): Debian's
python3-torchvision (run this script with /usr/bin/python3, whose torch matches LibTorch 1.13)
builds each, flattens it into an nn.Sequential subclass as torchgpipe's benchmarks flatten
ResNet, gives it its task as attributes (3x64x64 images, cross-entropy over 100 classes) and
scripts it into OUT/NAME.pt; then

    pipeprof sweep --model OUT/NAME.pt --batch B --devices cpu,cpu SWEEP_FLAGS -o OUT/NAME/report.json

and a markdown table: per model its layers, the measured candidates, the step MAPE after the
drift factor (before it), the peak MAPE per (candidate, device) and the worst device.

    /usr/bin/python3 bench/imported_models.py --pipeprof build/cli/pipeprof --out imported
"""
import argparse
import json
import os
import subprocess
import sys

# The same sweep flags and error figures as the training-step sweeps.
from training_step_sweeps import SWEEP_FLAGS, errors

CLASSES = 100


def torch_modules():
    """(torch, torchvision, an nn.Sequential subclass to script), or an exit saying what to install."""
    try:
        import torch
        import torchvision
        from torch import nn
    except ImportError as missing:
        raise SystemExit(f"{missing}: this bench needs Debian's python3-torch and python3-torchvision under "
                         "/usr/bin/python3 (`PIPEPROF_BOOTSTRAP_PYTHON=1 ./scripts/bootstrap.sh` installs both)")

    class Net(nn.Sequential):
        pass

    return torch, torchvision, Net


def flattened(name):
    """(the model as an nn.Sequential subclass, its batch)."""
    torch, torchvision, Net = torch_modules()
    from torch import nn

    torch.manual_seed(0)
    if name == "resnet50":
        m = torchvision.models.resnet50(num_classes=CLASSES)
        layers = [m.conv1, m.bn1, m.relu, m.maxpool, *m.layer1, *m.layer2, *m.layer3, *m.layer4,
                  m.avgpool, nn.Flatten(), m.fc]
        batch = 16
    elif name == "mobilenet_v2":
        m = torchvision.models.mobilenet_v2(num_classes=CLASSES)
        layers = [*m.features, nn.AdaptiveAvgPool2d(1), nn.Flatten(), *m.classifier]
        batch = 32
    elif name == "vit":
        m = torchvision.models.VisionTransformer(image_size=64, patch_size=8, num_layers=6, num_heads=4,
                                                 hidden_dim=192, mlp_dim=768, num_classes=CLASSES)

        class PatchEmbedding(nn.Module):
            """ViT's _process_input, class token and position embedding."""

            def __init__(self, vit):
                super().__init__()
                self.conv_proj = vit.conv_proj
                self.class_token = vit.class_token
                self.pos_embedding = vit.encoder.pos_embedding
                self.dropout = vit.encoder.dropout

            def forward(self, x):
                x = self.conv_proj(x).flatten(2).transpose(1, 2)
                x = torch.cat([self.class_token.expand(x.shape[0], -1, -1), x], dim=1)
                return self.dropout(x + self.pos_embedding)

        class ClassTokenHead(nn.Module):
            def __init__(self, heads):
                super().__init__()
                self.heads = heads

            def forward(self, x):
                return self.heads(x[:, 0])

        layers = [PatchEmbedding(m), *m.encoder.layers, m.encoder.ln, ClassTokenHead(m.heads)]
        batch = 32
    elif name == "transformer_lm":
        return transformer_lm(nn, Net), 16
    else:
        raise SystemExit("unknown model " + name)
    net = Net(*layers)
    net.pipeprof_input_shape = [3, 64, 64]
    net.pipeprof_loss = "cross_entropy"
    net.pipeprof_num_classes = CLASSES
    return net, batch


def transformer_lm(nn, Net, width=256, blocks=8, tokens=64, vocab=1000):
    """A language model built from torch.nn's layers: token and position embeddings, encoder blocks, a head."""
    import torch

    class Embeddings(nn.Module):
        def __init__(self):
            super().__init__()
            self.token = nn.Embedding(vocab, width)
            self.position = nn.Parameter(torch.randn(tokens, width) * 0.02)

        def forward(self, ids):
            return self.token(ids) + self.position

    class Block(nn.Module):
        """An encoder layer called with its input alone (a Sequential's child takes one argument)."""

        def __init__(self):
            super().__init__()
            self.layer = nn.TransformerEncoderLayer(width, nhead=4, dim_feedforward=4 * width, batch_first=True)

        def forward(self, x):
            return self.layer(x)

    layers = [Embeddings(), *[Block() for _ in range(blocks)],
              nn.LayerNorm(width), nn.Linear(width, vocab)]
    net = Net(*layers)
    net.pipeprof_input_shape = [tokens]
    net.pipeprof_input_dtype = "long"
    net.pipeprof_vocab_size = vocab
    net.pipeprof_loss = "next_token"
    return net


def save_model(name, path):
    """Scripts model `name` into `path`; returns its batch."""
    net, batch = flattened(name)
    import torch

    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.jit.script(net).save(path)
    return batch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeprof", default="build/cli/pipeprof")
    parser.add_argument("--out", default="imported-models")
    parser.add_argument("--models", nargs="+", default=["resnet50", "mobilenet_v2", "vit"],
                        help="resnet50, mobilenet_v2, vit, transformer_lm (token ids, next-token loss)")
    parser.add_argument("--report-only", action="store_true", help="re-read OUT's reports")
    args = parser.parse_args()
    rows = []
    for name in args.models:
        path = os.path.join(args.out, name + ".pt")
        report_path = os.path.join(args.out, name, "report.json")
        if not args.report_only:
            batch = save_model(name, path)
            command = [args.pipeprof, "sweep", "--model", path, "--batch", str(batch), "--devices", "cpu,cpu",
                       *SWEEP_FLAGS, "-o", report_path]
            print("$ " + " ".join(command), file=sys.stderr, flush=True)
            subprocess.run(command, check=True, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"))
        with open(report_path) as f:
            report = json.load(f)
        layers = len(report["profile"]["layers"]) if "profile" in report else "?"
        rows.append((name, layers, *errors(report)))
    print("| model | layers | measured | step MAPE after drift (before) | peak MAPE | worst device |")
    print("|---|---|---|---|---|---|")
    for name, layers, count, step, before, peak, worst in rows:
        print(f"| {name} | {layers} | {count} | {step:.1f}% ({before:.1f}%) | {peak:.1f}% | {worst:.1f}% |")


if __name__ == "__main__":
    main()
