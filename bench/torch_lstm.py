# Issue 18's LSTM benchmark in PyTorch eager (Debian python3-torch): batch 64, 100 steps of 128 inputs, LSTM(256)
# then Linear(1), Adam, mse; the best of 3 repetitions of `steps` training steps, in µs per step.
# "gru" as the 3rd argument: nn.GRU(128, 256) (the reset gate after the recurrent product, Keras's reset_after).
#   /usr/bin/python3 bench/torch_lstm.py [threads] [steps] [lstm|gru]
import json, sys, time
import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
cell = sys.argv[3] if len(sys.argv) > 3 else "lstm"
torch.set_num_threads(threads)
torch.manual_seed(0)
rnn = torch.nn.GRU if cell == "gru" else torch.nn.LSTM
lstm, head = rnn(128, 256, batch_first=True), torch.nn.Linear(256, 1)
opt = torch.optim.Adam(list(lstm.parameters()) + list(head.parameters()), 1e-3)
x, y = torch.rand(64, 100, 128), torch.rand(64, 1)


def step():
    opt.zero_grad()
    out, _ = lstm(x)
    loss = torch.nn.functional.mse_loss(head(out[:, -1]), y)
    loss.backward()
    opt.step()


step()
best = 1e30
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    best = min(best, (time.perf_counter() - t0) / steps * 1e6)
print(json.dumps({"framework": f"pytorch {torch.__version__} eager", "case": f"{cell.upper()}(256), {threads} threads",
                  "us_per_step": round(best, 1)}))
