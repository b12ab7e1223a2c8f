#!/usr/bin/python3
"""Writes the demo's TorchScript models into OUT_DIR (nothing is downloaded).

  risk_mlp_v1.pt          the tabular risk-control model: forward(stored [B, 48], realtime [B, 16])
                          -> fraud score [B, 1]; `stored` comes from the feature store.
  risk_mlp_v1_retrained.pt  the same graph with other weights (same graph fingerprint).
  risk_mlp_v2.pt          a wider second version (another graph fingerprint).
  text_classifier.pt      a small Transformer text classifier: forward(ids [B, L] int64)
                          -> logits [B, 2]; its cost grows with the sequence length L.

Usage: /usr/bin/python3 models/make_demo_models.py OUT_DIR
Needs Debian's python3-torch (scripts/install-deps installs it). Deterministic: fixed seeds.
"""
import os
import sys
import warnings

import torch
from torch import nn

STORED_FEATURES = 48
REALTIME_FEATURES = 16
VOCABULARY = 5000


class RiskMLP(nn.Module):
    def __init__(self, hidden: int):
        super().__init__()
        self.input = nn.Linear(STORED_FEATURES + REALTIME_FEATURES, hidden)
        self.hidden = nn.Linear(hidden, hidden)
        self.score = nn.Linear(hidden, 1)

    def forward(self, stored: torch.Tensor, realtime: torch.Tensor) -> torch.Tensor:
        x = torch.cat([stored, realtime], dim=1)
        x = torch.relu(self.input(x))
        x = torch.relu(self.hidden(x))
        return torch.sigmoid(self.score(x))


class TextClassifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCABULARY, 128)
        layer = nn.TransformerEncoderLayer(128, 4, 256, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(128, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        x = self.embed(ids)
        x = self.encoder(x)
        return self.head(x.mean(dim=1))


def save(module: nn.Module, path: str) -> None:
    scripted = torch.jit.script(module.eval())
    scripted.save(path)
    print(f"wrote {path}")


def main() -> int:
    # TorchScript warns about a constant of the stock TransformerEncoder; nothing to act on.
    warnings.filterwarnings("ignore", message=".*was found in ScriptModule constants.*")
    if len(sys.argv) != 2:
        print("usage: make_demo_models.py OUT_DIR", file=sys.stderr)
        return 2
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(1)
    save(RiskMLP(256), os.path.join(out, "risk_mlp_v1.pt"))
    torch.manual_seed(2)
    save(RiskMLP(256), os.path.join(out, "risk_mlp_v1_retrained.pt"))
    torch.manual_seed(3)
    save(RiskMLP(512), os.path.join(out, "risk_mlp_v2.pt"))
    torch.manual_seed(4)
    save(TextClassifier(), os.path.join(out, "text_classifier.pt"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
