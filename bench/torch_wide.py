"""PyTorch CPU eager reference for the wide MLP (784 -> 512 -> 512 -> 10, softmax, sparse CE, Adam) at a batch:
the same step as bench/wide_step.cpp (forward, loss, backward, Adam), on one fixed batch. One JSON line.
Usage: torch_wide.py <batch> <threads> [steps]"""
import json
import sys
import time

import torch

batch = int(sys.argv[1])
threads = int(sys.argv[2])
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 30
torch.set_num_threads(threads)
torch.manual_seed(0)
x = torch.rand(batch, 784)
y = torch.randint(0, 10, (batch,))
model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU(),
                            torch.nn.Linear(512, 10))
opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7)
loss_fn = torch.nn.CrossEntropyLoss()  # softmax + sparse categorical crossentropy, as Keras's pair


def step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(3):
    step()
best = 1e30
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    best = min(best, (time.perf_counter() - t0) / steps * 1e6)
print(json.dumps({"framework": "pytorch-eager-cpu", "case": f"wide MLP batch {batch}, {threads} thread(s), "
                  f"torch {torch.__version__}", "us_per_step": round(best, 1)}))
