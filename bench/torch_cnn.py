"""PyTorch CPU eager reference for bench/cnn_step.cpp's VGG-style CNN (32x32x3, conv 32-32-pool-64-64-pool, dense
128, 10; Adam, cross entropy) at a batch, channels_last memory format, on one fixed batch. One JSON line.
A 4th argument "bfloat16" runs the forward pass and loss under torch.autocast("cpu", torch.bfloat16) (PyTorch's
mixed precision: bfloat16 convolutions and matmuls through oneDNN, float32 weights and optimizer).
Usage: torch_cnn.py <batch> <threads> [steps] [float32|bfloat16]"""
import json
import sys
import time

import torch
from torch import nn

batch = int(sys.argv[1])
threads = int(sys.argv[2])
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 5
precision = sys.argv[4] if len(sys.argv) > 4 else "float32"
torch.set_num_threads(threads)
torch.manual_seed(0)
x = torch.rand(batch, 3, 32, 32).to(memory_format=torch.channels_last)
y = torch.randint(0, 10, (batch,))
model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                      nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.Conv2d(64, 64, 3, padding=1),
                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 8 * 8, 128), nn.ReLU(),
                      nn.Linear(128, 10)).to(memory_format=torch.channels_last)
opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
loss_fn = nn.CrossEntropyLoss()


def step():
    opt.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
        loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(2):
    step()
best = 1e30
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    best = min(best, (time.perf_counter() - t0) / steps * 1e6)
print(json.dumps({"framework": "pytorch-eager-cpu", "case": f"VGG-style CNN batch {batch}, {threads} thread(s), "
                  f"channels_last, {precision}, torch {torch.__version__}", "us_per_step": round(best, 1)}))
