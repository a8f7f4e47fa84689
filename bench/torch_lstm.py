# Issue 18's LSTM benchmark in PyTorch eager (Debian python3-torch): batch 64, 100 steps of 128 inputs, LSTM(256)
# then Linear(1), Adam, mse; the best of 3 repetitions of `steps` training steps, in µs per step.
# "gru" as the 3rd argument: nn.GRU(128, 256) (the reset gate after the recurrent product, Keras's reset_after).
# "text": bench/text_step's classifier, Embedding(10000, 128) + a bidirectional nn.LSTM(128, 128) over packed
# sequences (PyTorch's way with right-padded rows: the same computation as Keras's mask) + Linear(256, 1), BCE, on
# the same ids. "textpad": the same without packing, every row over all 100 steps (pads included: not the masked
# computation, but PyTorch's CPU backward of packed sequences is slow, and this is its floor for the shapes).
# "bf16" as the 4th argument: the forward under torch.autocast("cpu", torch.bfloat16) (PyTorch's mixed precision).
#   /usr/bin/python3 bench/torch_lstm.py [threads] [steps] [lstm|gru|text|textpad] [f32|bf16]
import json, sys, time
import torch

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 2
steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
cell = sys.argv[3] if len(sys.argv) > 3 else "lstm"
autocast = len(sys.argv) > 4 and sys.argv[4] == "bf16"
torch.set_num_threads(threads)
torch.manual_seed(0)
if cell in ("text", "textpad"):
    state = 12345  # bench/text_step's linear congruential sequence: the same lengths, ids and labels

    def nxt():
        global state
        state = (state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return state >> 33

    ids, lengths, labels = torch.zeros(64, 100, dtype=torch.long), [], []
    for b in range(64):
        n = 20 + nxt() % 81
        for k in range(n):
            ids[b, k] = 1 + nxt() % 9999
        lengths.append(n)
        labels.append(float(nxt() % 2))
    lengths, y = torch.tensor(lengths), torch.tensor(labels).reshape(64, 1)
    embed, lstm = torch.nn.Embedding(10000, 128, padding_idx=0), torch.nn.LSTM(128, 128, batch_first=True, bidirectional=True)
    head = torch.nn.Linear(256, 1)
    params = list(embed.parameters()) + list(lstm.parameters()) + list(head.parameters())

    def forward():
        if cell == "textpad":
            _, (h, _) = lstm(embed(ids))
        else:
            packed = torch.nn.utils.rnn.pack_padded_sequence(embed(ids), lengths, batch_first=True, enforce_sorted=False)
            _, (h, _) = lstm(packed)
        return torch.nn.functional.binary_cross_entropy_with_logits(head(torch.cat([h[0], h[1]], 1)), y)
else:
    rnn = torch.nn.GRU if cell == "gru" else torch.nn.LSTM
    lstm, head = rnn(128, 256, batch_first=True), torch.nn.Linear(256, 1)
    params = list(lstm.parameters()) + list(head.parameters())
    x, y = torch.rand(64, 100, 128), torch.rand(64, 1)

    def forward():
        out, _ = lstm(x)
        return torch.nn.functional.mse_loss(head(out[:, -1]), y)
opt = torch.optim.Adam(params, 1e-3)


def step():
    opt.zero_grad()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        loss = forward()
    loss.backward()
    opt.step()


step()
best = 1e30
for _ in range(3):
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    best = min(best, (time.perf_counter() - t0) / steps * 1e6)
print(json.dumps({"framework": f"pytorch {torch.__version__} eager", "case": (f"Embedding + bidirectional LSTM(128) text classifier, "
                           f"{'packed sequences' if cell == 'text' else 'all 100 steps, not packed'}"
                           if cell.startswith("text") else f"{cell.upper()}(256)") + f", {threads} threads" + (", bf16 autocast" if autocast else ""),
                  "us_per_step": round(best, 1)}))
