"""PyTorch on the same GPU as Osprey's benchmarks, for scripts/gpu-check.sh's table: the seed model (20 -> 64 -> 32
-> 1, BCE) or the wide MLP (784 -> 512 -> 512 -> 10, cross-entropy) as bench/device_step; the VGG-style CNN as
bench/cnn_step (channels_last); the LSTM(256) / GRU(256) over 100 steps of 128 inputs then Linear(1), mse, as
bench/lstm_step; the Transformer encoder block as bench/transformer_step (bench/torch_transformer.py's Block).
Adam, one training step per iteration on a fixed batch already on the GPU, the loss read back every step (as
Osprey's train_on_batch returns it). Eager, and the whole step (forward, backward, Adam with capturable=True)
captured once as a CUDA graph (torch.cuda.graph) and replayed. TF32 on, as Osprey's default. Prints Markdown rows
like device_step:
| model | batch | device | µs/step |

Usage: python3 bench/torch_gpu.py <seed|wide|cnn|lstm|gru|transformer> <batch> [steps]
"""
import sys
import time

import torch

name = sys.argv[1]
batch = int(sys.argv[2])
steps = int(sys.argv[3]) if len(sys.argv) > 3 else 200
label = f"torch {torch.__version__.split('+')[0]}"
if not torch.cuda.is_available():
    print(f"| {name} | {batch} | {label} cuda | skipped: no GPU |")
    sys.exit(0)
dev = torch.device("cuda")
torch.backends.cuda.matmul.allow_tf32 = True
torch.backends.cudnn.allow_tf32 = True


class Block(torch.nn.Module):  # bench/torch_transformer.py's encoder block
    def __init__(self, width=256):
        super().__init__()
        self.mha = torch.nn.MultiheadAttention(width, 4, batch_first=True)
        self.n1, self.n2 = torch.nn.LayerNorm(width, eps=1e-3), torch.nn.LayerNorm(width, eps=1e-3)
        self.f1, self.f2 = torch.nn.Linear(width, 4 * width), torch.nn.Linear(4 * width, width)

    def forward(self, x):
        a, _ = self.mha(x, x, x, need_weights=False)
        h = self.n1(x + a)
        return self.n2(h + self.f2(torch.relu(self.f1(h))))


class Recurrent(torch.nn.Module):  # bench/torch_lstm.py's model: the last step's output through Linear(1)
    def __init__(self, cell):
        super().__init__()
        self.rnn = (torch.nn.LSTM if cell == "lstm" else torch.nn.GRU)(128, 256, batch_first=True)
        self.head = torch.nn.Linear(256, 1)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def make(capturable):
    torch.manual_seed(0)
    if name == "cnn":
        nn = torch.nn
        model = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 32, 3, padding=1), nn.ReLU(),
                              nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(),
                              nn.Conv2d(64, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                              nn.Linear(64 * 8 * 8, 128), nn.ReLU(), nn.Linear(128, 10))
        model = model.to(dev).to(memory_format=torch.channels_last)
        loss_fn = nn.CrossEntropyLoss()
        x = torch.rand(batch, 3, 32, 32, device=dev).to(memory_format=torch.channels_last)
        y = torch.randint(0, 10, (batch,), device=dev)
    elif name in ("lstm", "gru"):
        model, loss_fn = Recurrent(name).to(dev), torch.nn.MSELoss()
        x, y = torch.rand(batch, 100, 128, device=dev), torch.rand(batch, 1, device=dev)
    elif name == "transformer":
        model, loss_fn = Block().to(dev), torch.nn.MSELoss()
        x, y = torch.rand(batch, 128, 256, device=dev), torch.rand(batch, 128, 256, device=dev)
    elif name == "wide":
        model = torch.nn.Sequential(torch.nn.Linear(784, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                    torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(dev)
        loss_fn = torch.nn.CrossEntropyLoss()
        x = torch.rand(batch, 784, device=dev)
        y = torch.randint(0, 10, (batch,), device=dev)
    else:
        model = torch.nn.Sequential(torch.nn.Linear(20, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32),
                                    torch.nn.ReLU(), torch.nn.Linear(32, 1), torch.nn.Sigmoid()).to(dev)
        loss_fn = torch.nn.BCELoss()
        x = torch.rand(batch, 20, device=dev)
        y = torch.randint(0, 2, (batch, 1), device=dev).float()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, capturable=capturable)
    return model, loss_fn, opt, x, y


def timed(step):
    for _ in range(10):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps * 1e6


model, loss_fn, opt, x, y = make(False)


def eager_step():
    opt.zero_grad(set_to_none=True)
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


print(f"| {name} | {batch} | {label} cuda eager | {timed(eager_step):.1f} |")

try:
    model, loss_fn, opt, x, y = make(True)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up on a side stream before capture, as PyTorch's docs do
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(model(x), y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = loss_fn(model(x), y)
        static_loss.backward()
        opt.step()

    def graph_step():
        graph.replay()
        return static_loss.item()

    print(f"| {name} | {batch} | {label} cuda graph | {timed(graph_step):.1f} |")
except Exception as e:  # a model PyTorch cannot capture: the eager row stands alone
    print(f"| {name} | {batch} | {label} cuda graph | failed: {type(e).__name__}: {str(e).splitlines()[0][:120]} |")
