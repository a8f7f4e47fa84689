"""PyTorch CPU eager reference for bench/seed_step.cpp: same model, data sizes, optimizer and batch.

Per step: forward, BCE loss, backward, Adam step, and the accuracy count that Keras's fit also computes.
Prints one JSON line, like the C++ benchmark.
"""
import json
import sys
import time

import torch

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
threads = int(sys.argv[2]) if len(sys.argv) > 2 else 1
torch.set_num_threads(threads)
torch.manual_seed(0)
x = torch.rand(2048, 20)
y = torch.randint(0, 2, (2048, 1)).float()
model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
                            torch.nn.Linear(32, 1), torch.nn.Sigmoid())
opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
loss_fn = torch.nn.BCELoss()


def epoch():
    perm = torch.randperm(2048)
    for b in range(0, 2048, 64):
        idx = perm[b:b + 64]
        xb, yb = x[idx], y[idx]
        opt.zero_grad(set_to_none=True)
        p = model(xb)
        loss = loss_fn(p, yb)
        loss.backward()
        opt.step()
        _ = loss.item(), ((p > 0.5).float() == yb).sum().item()


epoch()  # warm-up
t0 = time.perf_counter()
for _ in range(epochs):
    epoch()
us = (time.perf_counter() - t0) / (epochs * 32) * 1e6
print(json.dumps({"framework": "pytorch-eager-cpu", "case": f"loop, {threads} thread(s), torch {torch.__version__}",
                  "us_per_step": round(us, 1)}))
