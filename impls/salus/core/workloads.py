"""Workload registry modelled on Salus's job mix, sized for a CPU (ms to ~100 ms / iteration).

Seven model families (the paper's MNIST nets, ResNet, VGG, speech/seq2seq-style
recurrent LM, a small transformer, VAE, super-resolution), each at three batch sizes
for training and at batch 1/5/10 for inference. Names::

    <model>_b<batch>          training job, e.g. "resnet_b16"
    <model>_infer_b<batch>    inference job (forward only), e.g. "resnet_infer_b5"

A :class:`Job` is model + optimizer + synthetic data (made on the device from a
seed, no download) + total iterations + :meth:`Job.step` (one iteration).
"""
from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import torch
from torch import nn
from torch.nn import functional as F

# ---------------------------------------------------------------- models


class MLP(nn.Module):
    """MNIST-style multilayer perceptron."""

    def __init__(self, inputs=784, hidden=512, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden),
                                 nn.ReLU(), nn.Linear(hidden, classes))

    def forward(self, x):
        return self.net(x)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNetSmall(nn.Module):
    """CIFAR-style ResNet: stem + three stages of basic blocks (16/32/64 channels)."""

    def __init__(self, classes=10, widths=(16, 32, 64), blocks=1):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, 1, 1, bias=False), nn.BatchNorm2d(widths[0]), nn.ReLU())
        layers, cin = [], widths[0]
        for i, w in enumerate(widths):
            for b in range(blocks):
                layers.append(BasicBlock(cin, w, 2 if (i > 0 and b == 0) else 1))
                cin = w
        self.layers = nn.Sequential(*layers)
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.layers(self.stem(x))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class VGGSmall(nn.Module):
    """VGG-style plain conv stack on 32x32 images."""

    def __init__(self, classes=10, cfg=(32, "M", 64, "M", 128, 128, "M")):
        super().__init__()
        layers, cin = [], 3
        for c in cfg:
            if c == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(cin, c, 3, padding=1), nn.ReLU(inplace=True)]
                cin = c
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(nn.Linear(cin * 4 * 4, 256), nn.ReLU(inplace=True), nn.Linear(256, classes))

    def forward(self, x):
        return self.classifier(self.features(x).flatten(1))


class LSTMLM(nn.Module):
    """Word-level LSTM language model (the paper's speech / seq2seq recurrent jobs)."""

    def __init__(self, vocab=2000, embed=128, hidden=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, embed)
        self.lstm = nn.LSTM(embed, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        h, _ = self.lstm(self.embed(tokens))
        return self.out(h)


class TinyTransformer(nn.Module):
    """Two-layer causal transformer language model."""

    def __init__(self, vocab=2000, d_model=128, heads=4, ff=512, layers=2, seq=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.pos = nn.Parameter(torch.zeros(1, seq, d_model))
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.out = nn.Linear(d_model, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(seq), persistent=False)

    def forward(self, tokens):
        x = self.embed(tokens) + self.pos[:, : tokens.shape[1]]
        n = tokens.shape[1]
        return self.out(self.encoder(x, mask=self.mask[:n, :n], is_causal=True))


class VAE(nn.Module):
    """The classic MNIST variational autoencoder (784-400-20)."""

    def __init__(self, inputs=784, hidden=400, latent=20):
        super().__init__()
        self.fc1 = nn.Linear(inputs, hidden)
        self.mu = nn.Linear(hidden, latent)
        self.logvar = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, inputs)

    def forward(self, x):
        h = F.relu(self.fc1(x))
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.randn_like(mu) * torch.exp(0.5 * logvar)
        return self.fc4(F.relu(self.fc3(z))), mu, logvar


class SuperRes(nn.Module):
    """ESPCN-style super-resolution net (upscale 3 with a pixel shuffle)."""

    def __init__(self, upscale=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 5, padding=2)
        self.conv2 = nn.Conv2d(64, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, upscale ** 2, 3, padding=1)
        self.shuffle = nn.PixelShuffle(upscale)

    def forward(self, x):
        return self.shuffle(self.conv3(torch.tanh(self.conv2(torch.tanh(self.conv1(x))))))


# ---------------------------------------------------------------- losses and data


def _classify(model, x, y):
    return F.cross_entropy(model(x), y)


def _lm(model, x, y):
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _vae(model, x, _y):
    recon, mu, logvar = model(x)
    bce = F.binary_cross_entropy_with_logits(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (bce + kld) / x.shape[0]


def _mse(model, x, y):
    return F.mse_loss(model(x), y)


@dataclasses.dataclass(frozen=True)
class ModelFamily:
    name: str
    make_model: Callable[[], nn.Module]
    make_data: Callable[[int, torch.device, torch.Generator], tuple[torch.Tensor, torch.Tensor]]
    loss: Callable
    optimizer: str  # "sgd" | "adam"
    train_batches: tuple[int, int, int]
    lr: float = 0.01


def _images(shape):
    def make(batch, device, gen):
        x = torch.randn((batch, *shape), device=device, generator=gen)
        y = torch.randint(0, 10, (batch,), device=device, generator=gen)
        return x, y
    return make


def _tokens(vocab, seq):
    def make(batch, device, gen):
        t = torch.randint(0, vocab, (batch, seq + 1), device=device, generator=gen)
        return t[:, :-1].contiguous(), t[:, 1:].contiguous()
    return make


def _mnist_unit(batch, device, gen):
    x = torch.rand((batch, 784), device=device, generator=gen)
    return x, torch.zeros(batch, device=device)


def _superres(batch, device, gen):
    x = torch.randn((batch, 1, 32, 32), device=device, generator=gen)
    return x, torch.randn((batch, 1, 96, 96), device=device, generator=gen)


def _mnist_classes(batch, device, gen):
    x = torch.randn((batch, 784), device=device, generator=gen)
    return x, torch.randint(0, 10, (batch,), device=device, generator=gen)


FAMILIES: dict[str, ModelFamily] = {f.name: f for f in [
    ModelFamily("mlp", MLP, _mnist_classes, _classify, "sgd", (64, 128, 256)),
    ModelFamily("resnet", ResNetSmall, _images((3, 32, 32)), _classify, "sgd", (8, 16, 32)),
    ModelFamily("vgg", VGGSmall, _images((3, 32, 32)), _classify, "sgd", (8, 16, 32)),
    ModelFamily("lstm", LSTMLM, _tokens(2000, 32), _lm, "adam", (8, 16, 32), lr=1e-3),
    ModelFamily("transformer", TinyTransformer, _tokens(2000, 64), _lm, "adam", (4, 8, 16), lr=1e-3),
    ModelFamily("vae", VAE, _mnist_unit, _vae, "adam", (32, 64, 128), lr=1e-3),
    ModelFamily("superres", SuperRes, _superres, _mse, "adam", (4, 8, 16), lr=1e-3),
]}
INFERENCE_BATCHES = (1, 5, 10)


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    name: str
    family: str
    batch: int
    train: bool


def _registry() -> dict[str, WorkloadSpec]:
    specs = {}
    for fam in FAMILIES.values():
        for b in fam.train_batches:
            specs[f"{fam.name}_b{b}"] = WorkloadSpec(f"{fam.name}_b{b}", fam.name, b, True)
        for b in INFERENCE_BATCHES:
            specs[f"{fam.name}_infer_b{b}"] = WorkloadSpec(f"{fam.name}_infer_b{b}", fam.name, b, False)
    return specs


WORKLOADS: dict[str, WorkloadSpec] = _registry()


def workload_names(train: bool | None = None) -> list[str]:
    """Return every registered workload name (only training or inference ones if asked)."""
    return [n for n, s in WORKLOADS.items() if train is None or s.train == train]


def spec(name: str) -> WorkloadSpec:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(WORKLOADS)}") from None


# ---------------------------------------------------------------- jobs

_ids = itertools.count()


class Job:
    """One training (or inference) job: model + optimizer + data + iterations + :meth:`step`."""

    def __init__(self, workload: str, model: nn.Module, optimizer, inputs, targets, loss_fn,
                 total_iterations: int, train: bool, job_id: int | None = None):
        self.job_id = next(_ids) if job_id is None else job_id
        self.workload = workload
        self.model = model
        self.optimizer = optimizer
        self.inputs = inputs
        self.targets = targets
        self.loss_fn = loss_fn
        self.total_iterations = int(total_iterations)
        self.train = train
        self.iterations_done = 0
        self.last_loss: torch.Tensor | None = None

    def __repr__(self) -> str:
        return f"Job({self.job_id}, {self.workload}, {self.iterations_done}/{self.total_iterations})"

    @property
    def remaining_iterations(self) -> int:
        return max(0, self.total_iterations - self.iterations_done)

    @property
    def finished(self) -> bool:
        return self.iterations_done >= self.total_iterations

    def step(self, count: bool = True) -> None:
        """Run one iteration (launch it, on CUDA: the caller synchronises). The gradients
        are freed when it ends: they are ephemeral memory, as in Salus, not held between
        iterations while other jobs run."""
        if self.train:
            self.optimizer.zero_grad(set_to_none=True)
            loss = self.loss_fn(self.model, self.inputs, self.targets)
            loss.backward()
            self.optimizer.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.last_loss = loss.detach()
        else:
            with torch.inference_mode():
                self.model(self.inputs)
            self.last_loss = None
        if count:
            self.iterations_done += 1

    # --- state, for checkpointing and memory accounting

    def state_dict(self) -> dict:
        state = {"model": self.model.state_dict(), "iterations_done": self.iterations_done}
        if self.optimizer is not None:
            state["optimizer"] = self.optimizer.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.model.load_state_dict(state["model"])
        if self.optimizer is not None and "optimizer" in state:
            self.optimizer.load_state_dict(state["optimizer"])
        self.iterations_done = int(state.get("iterations_done", self.iterations_done))

    def state_slots(self) -> list[tuple[object, str]]:
        """(owner, key) of every persistent tensor: parameters, buffers, optimizer state.

        ``owner`` is a module (attribute ``key``) or an optimizer state dict (item ``key``),
        so a suspend/resume can swap each tensor out and back in place.
        """
        slots: list[tuple[object, str]] = []
        for module in self.model.modules():
            for key, p in module._parameters.items():
                if p is not None:
                    slots.append((p, "data"))
            for key, b in module._buffers.items():
                if b is not None:
                    slots.append((module._buffers, key))
        if self.optimizer is not None:
            for per_param in self.optimizer.state.values():
                for key, value in per_param.items():
                    if isinstance(value, torch.Tensor) and value.dim() > 0:
                        slots.append((per_param, key))
        return slots

    def persistent_tensors(self) -> list[torch.Tensor]:
        tensors = [p for p in self.model.parameters()] + [b for b in self.model.buffers()]
        if self.optimizer is not None:
            for per_param in self.optimizer.state.values():
                tensors += [v for v in per_param.values() if isinstance(v, torch.Tensor)]
        tensors += [t for t in (self.inputs, self.targets) if isinstance(t, torch.Tensor)]
        return tensors

    def state_bytes(self) -> int:
        """Bytes of model + optimizer state (what a checkpoint moves)."""
        total = 0
        for owner, key in self.state_slots():
            t = owner.data if key == "data" else owner[key]
            total += t.numel() * t.element_size()
        return total

    def release(self) -> None:
        """Drop every reference to the job's tensors so their memory can be freed."""
        self.model = self.optimizer = self.inputs = self.targets = self.last_loss = None


def build_job(name: str, device: torch.device | str = "cpu", seed: int = 0,
              iterations: int = 100, job_id: int | None = None, warm: bool = True) -> Job:
    """Build workload ``name`` on ``device``: model (seeded init), optimizer, synthetic data.

    ``warm`` runs one uncounted iteration so optimizer state exists (what a
    checkpoint of a running job holds) and lazy initialisation is out of the way.
    """
    s = spec(name)
    fam = FAMILIES[s.family]
    device = torch.device(device)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = fam.make_model().to(device)
    gen = torch.Generator(device=device)
    gen.manual_seed(seed + 1)
    inputs, targets = fam.make_data(s.batch, device, gen)
    if s.train:
        model.train()
        if fam.optimizer == "adam":
            optimizer = torch.optim.Adam(model.parameters(), lr=fam.lr)
        else:
            optimizer = torch.optim.SGD(model.parameters(), lr=fam.lr, momentum=0.9)
    else:
        model.eval()
        optimizer = None
    job = Job(name, model, optimizer, inputs, targets, fam.loss, iterations, s.train, job_id)
    if warm:
        job.step(count=False)
    return job
