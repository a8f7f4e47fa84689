# Issue 18's Transformer benchmark in PyTorch eager (Debian python3-torch): one post-norm encoder block as
# bench/transformer_step.cpp builds it -- MultiheadAttention (4 heads, width 256, 128 steps), residual +
# LayerNorm (eps 1e-3 as Keras's), Linear(1024) ReLU Linear(256), residual + LayerNorm; batch 32, Adam, mse. The
# best of 3 repetitions of `steps` training steps, in µs per step. A 3rd argument "bfloat16" runs the forward pass
# and loss under torch.autocast("cpu", torch.bfloat16) (bfloat16 matmuls, float32 weights and optimizer), as
# `bench/transformer_step 32 3 128 /CPU:0 json mixed_bfloat16` computes.
#   /usr/bin/python3 bench/torch_transformer.py [threads] [steps] [float32|bfloat16]
import json, sys, time
import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
precision = sys.argv[3] if len(sys.argv) > 3 else "float32"
torch.set_num_threads(threads)
torch.manual_seed(0)
W, T, B = 256, 128, 32


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(W, 4, batch_first=True)
        self.n1, self.n2 = torch.nn.LayerNorm(W, eps=1e-3), torch.nn.LayerNorm(W, eps=1e-3)
        self.f1, self.f2 = torch.nn.Linear(W, 4 * W), torch.nn.Linear(4 * W, W)

    def forward(self, x):
        a, _ = self.mha(x, x, x, need_weights=False)
        h = self.n1(x + a)
        return self.n2(h + self.f2(torch.relu(self.f1(h))))


block = Block()
opt = torch.optim.Adam(block.parameters(), 1e-3)
x, y = torch.rand(B, T, W), torch.rand(B, T, W)


def step():
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
        out = block(x)
    loss = torch.nn.functional.mse_loss(out.float(), y)
    loss.backward()
    opt.step()


step()
best = 1e30
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    best = min(best, (time.perf_counter() - t0) / steps * 1e6)
print(json.dumps({"framework": f"pytorch {torch.__version__} eager", "case": f"Transformer block, {threads} threads, {precision}",
                  "us_per_step": round(best, 1)}))
