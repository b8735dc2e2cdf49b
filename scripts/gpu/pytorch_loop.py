#!/usr/bin/env python3
"""Plain PyTorch training loop: the baseline that `dynamix bench step` is compared with (issue #3).

One process, one device, synthetic data created once on the device, SGD as `dynamix bench step`
configures it (lr 0.01, momentum 0.9, no Nesterov, no weight decay), mean cross-entropy. Prints
one JSON line on stdout (everything else goes to stderr):

  {"impl": "pytorch", "model", "batch", "precision", "channels_last", "compile", "images_per_s",
   "step_ms_median", "step_ms_repeats", ...}

The architectures are DYNAMIX's (models/resnet.cc, models/vgg.cc, models/registry.cc):
  resnet18/resnet50: torchvision's layout; an input smaller than 64 px gets DYNAMIX's CIFAR stem
    (3x3 stride-1 conv, no max-pool) instead of the ImageNet one (7x7 stride-2 conv + max-pool).
  vgg16: configuration "D" without BatchNorm; from 64 px up the ImageNet head (7x7 adaptive pool,
    4096-4096-classes with dropout 0.5), below it DYNAMIX's CIFAR head (1x1 pool, one Linear).
torchvision's constructors are used when torchvision imports (adapted as above), else the
definitions below, which build the same layers under the same names (--verify-arch compares the
two parameter by parameter). Known differences from the LibTorch models: torchvision's ReLUs are
in place, DYNAMIX's are not (same arithmetic, less activation memory here); weight
initialization does not matter for speed.

Precision as DYNAMIX's train.precision: autocast around forward only, the loss in float32 on
float32 logits, weights, gradients and optimizer state in float32; fp16 adds a GradScaler.
"""

import argparse
import contextlib
import json
import math
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# Per model: (default batch, default image size, default classes) of issue #3's settings.
DEFAULTS = {
    "resnet18": (256, 32, 10),
    "resnet50": (64, 224, 1000),
    "vgg16": (64, 224, 1000),
}
IMAGENET_MIN = 64  # DYNAMIX: ImageNet stem / head from 64 px up (models/resnet.cc, models/vgg.cc)
# Parameter counts of DYNAMIX's models, pinned by tests/models/test_counts.cc: (model, ImageNet
# stem/head, classes) -> count. A model built here with one of these keys must match.
DYNAMIX_PARAMS = {
    ("resnet18", False, 10): 11173962,
    ("resnet50", True, 1000): 25557032,
    ("vgg16", True, 1000): 138357544,
}


def log(*args):
    print("pytorch_loop:", *args, file=sys.stderr, flush=True)


# --- Self-contained definitions (used without torchvision) --------------------------------------


def _conv(cin, cout, k, stride=1):
    return nn.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, cin, planes, stride):
        super().__init__()
        self.conv1 = _conv(cin, planes, 3, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = _conv(planes, planes, 3)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = None
        if stride != 1 or cin != planes:
            self.downsample = nn.Sequential(_conv(cin, planes, 1, stride), nn.BatchNorm2d(planes))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, cin, planes, stride):
        super().__init__()
        out = planes * self.expansion
        self.conv1 = _conv(cin, planes, 1)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = _conv(planes, planes, 3, stride)  # the stride on the 3x3 ("v1.5")
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = _conv(planes, out, 1)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or cin != out:
            self.downsample = nn.Sequential(_conv(cin, out, 1, stride), nn.BatchNorm2d(out))

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + (x if self.downsample is None else self.downsample(x)))


class ResNet(nn.Module):
    def __init__(self, block, blocks, classes, imagenet_stem):
        super().__init__()
        self.conv1 = _conv(3, 64, 7, 2) if imagenet_stem else _conv(3, 64, 3, 1)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1) if imagenet_stem else nn.Identity()
        cin = 64
        for stage, (planes, n) in enumerate(zip((64, 128, 256, 512), blocks)):
            layers = []
            for i in range(n):
                layers.append(block(cin, planes, 2 if stage > 0 and i == 0 else 1))
                cin = planes * block.expansion
            setattr(self, f"layer{stage + 1}", nn.Sequential(*layers))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(cin, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


VGG16_FEATURES = [64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M", 512, 512, 512, "M"]


class VGG(nn.Module):
    def __init__(self, classes, imagenet_head):
        super().__init__()
        layers, cin = [], 3
        for v in VGG16_FEATURES:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [nn.Conv2d(cin, v, 3, padding=1), nn.ReLU(inplace=True)]
                cin = v
        self.features = nn.Sequential(*layers)
        self.avgpool, self.classifier = _vgg_head(classes, imagenet_head)

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def _vgg_head(classes, imagenet_head):
    if imagenet_head:
        return nn.AdaptiveAvgPool2d((7, 7)), nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, 4096), nn.ReLU(inplace=True), nn.Dropout(0.5),
            nn.Linear(4096, classes))
    return nn.AdaptiveAvgPool2d((1, 1)), nn.Sequential(nn.Linear(512, classes))


def init_like_dynamix(model):
    """torchvision's (and DYNAMIX's) initialization: He fan-out convs, BN at identity, N(0, 0.01)
    linears with zero bias in VGG."""
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    if isinstance(model, VGG):
        for m in model.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)
    return model


def builtin_model(name, classes, image_size):
    imagenet = image_size >= IMAGENET_MIN
    if name == "resnet18":
        return init_like_dynamix(ResNet(BasicBlock, (2, 2, 2, 2), classes, imagenet))
    if name == "resnet50":
        return init_like_dynamix(ResNet(Bottleneck, (3, 4, 6, 3), classes, imagenet))
    if name == "vgg16":
        return init_like_dynamix(VGG(classes, imagenet))
    raise ValueError(f"unknown model {name!r}")


def torchvision_model(tv, name, classes, image_size):
    imagenet = image_size >= IMAGENET_MIN
    if name in ("resnet18", "resnet50"):
        model = getattr(tv.models, name)(num_classes=classes)
        if not imagenet:  # DYNAMIX's CIFAR stem
            model.conv1 = nn.Conv2d(3, 64, 3, stride=1, padding=1, bias=False)
            nn.init.kaiming_normal_(model.conv1.weight, mode="fan_out", nonlinearity="relu")
            model.maxpool = nn.Identity()
        return model
    if name == "vgg16":
        model = tv.models.vgg16(num_classes=classes)
        if not imagenet:  # DYNAMIX's CIFAR head
            model.avgpool, model.classifier = _vgg_head(classes, False)
            nn.init.normal_(model.classifier[0].weight, 0, 0.01)
            nn.init.zeros_(model.classifier[0].bias)
        return model
    raise ValueError(f"unknown model {name!r}")


def import_torchvision():
    try:
        import torchvision
        return torchvision
    except Exception as e:  # missing, or built for another torch
        log(f"torchvision not usable ({type(e).__name__}: {e}); using the built-in definitions")
        return None


def param_shapes(model):
    return [(k, tuple(v.shape)) for k, v in model.state_dict().items()]


def count_params(model):
    return sum(p.numel() for p in model.parameters())


def check_count(name, image_size, classes, n_params):
    """Fails when DYNAMIX's test pins a different parameter count for this model."""
    want = DYNAMIX_PARAMS.get((name, image_size >= IMAGENET_MIN, classes))
    if want is not None and want != n_params:
        raise SystemExit(f"pytorch_loop: {name} ({image_size} px, {classes} classes) has {n_params} parameters, "
                         f"DYNAMIX's has {want} (tests/models/test_counts.cc): not the same architecture")
    return want is not None


def verify_arch(args):
    """Builds each model both ways and compares names and shapes of every parameter and buffer."""
    tv = import_torchvision()
    if tv is None:
        raise SystemExit("pytorch_loop: --verify-arch needs torchvision")
    results, ok = [], True
    for name, (_, size, classes) in DEFAULTS.items():
        for image_size in sorted({size, 32, 224}):
            builtin = builtin_model(name, classes, image_size)
            a = param_shapes(builtin)
            b = param_shapes(torchvision_model(tv, name, classes, image_size))
            same = a == b
            ok = ok and same
            n = count_params(builtin)
            results.append({"model": name, "image_size": image_size, "classes": classes, "same": same,
                            "params": n, "count_pinned_by_dynamix": check_count(name, image_size, classes, n)})
    print(json.dumps({"verify_arch": results, "all_same": ok, "torchvision": tv.__version__}))
    if not ok:
        raise SystemExit("pytorch_loop: the built-in definitions differ from torchvision's")


# --- The training loop ---------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", choices=sorted(DEFAULTS), default="resnet18")
    p.add_argument("--batch", type=int, help="default: 256 for resnet18, 64 otherwise")
    p.add_argument("--image-size", type=int, help="default: 32 for resnet18, 224 otherwise")
    p.add_argument("--classes", type=int, help="default: 10 for resnet18, 1000 otherwise")
    p.add_argument("--precision", choices=["fp32", "bf16", "fp16"], default="fp32")
    p.add_argument("--channels-last", action="store_true")
    p.add_argument("--compile", action="store_true", help="torch.compile the model")
    p.add_argument("--compile-mode", default=None, help="torch.compile mode (default: PyTorch's)")
    p.add_argument("--cudnn-benchmark", action="store_true",
                   help="cudnn.benchmark = True (off by default, as in LibTorch and DYNAMIX)")
    p.add_argument("--steps", type=int, default=30, help="timed steps per repeat")
    p.add_argument("--warmup", type=int, default=10, help="untimed steps first")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--optimizer", choices=["sgd"], default="sgd")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--optimizer-impl", choices=["default", "loop", "foreach", "fused"], default="default",
                   help="torch.optim.SGD implementation (default: PyTorch's choice, foreach on CUDA)")
    p.add_argument("--no-loss-item", action="store_true",
                   help="do not read the loss on the host every step (DYNAMIX's trainer does)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--label", default="", help="free text copied into the JSON line")
    p.add_argument("--builtin", action="store_true", help="use the built-in definitions even with torchvision")
    p.add_argument("--verify-arch", action="store_true",
                   help="only compare the built-in definitions with torchvision's, then exit")
    args = p.parse_args(argv)
    batch, size, classes = DEFAULTS[args.model]
    args.batch = batch if args.batch is None else args.batch
    args.image_size = size if args.image_size is None else args.image_size
    args.classes = classes if args.classes is None else args.classes
    for key in ("batch", "image_size", "classes", "steps", "repeats"):
        if getattr(args, key) < 1:
            p.error(f"--{key.replace('_', '-')} must be >= 1")
    if args.warmup < 0:
        p.error("--warmup must be >= 0")
    if args.model == "vgg16" and args.image_size < 32:
        p.error("vgg16 needs --image-size >= 32 (five 2x2 pools), as DYNAMIX's registry")
    if args.precision == "fp16" and args.device != "cuda":
        p.error("--precision fp16 needs --device cuda (DYNAMIX refuses fp16 on the CPU too)")
    return args


def _setting(read):
    try:
        return read()
    except Exception:  # renamed or removed in this PyTorch
        return None


def make_optimizer(args, params):
    kwargs = dict(lr=args.lr, momentum=args.momentum, nesterov=False, weight_decay=0.0)
    if args.optimizer_impl == "loop":
        kwargs["foreach"] = False
    elif args.optimizer_impl == "foreach":
        kwargs["foreach"] = True
    elif args.optimizer_impl == "fused":
        kwargs["fused"] = True
    return torch.optim.SGD(params, **kwargs)


def run(args):
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("pytorch_loop: --device cuda, but torch sees no CUDA device")
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    torch.manual_seed(args.seed)
    if cuda:
        torch.backends.cudnn.benchmark = args.cudnn_benchmark

    tv = None if args.builtin else import_torchvision()
    if tv is not None:
        model = torchvision_model(tv, args.model, args.classes, args.image_size)
    else:
        model = builtin_model(args.model, args.classes, args.image_size)
    n_params = count_params(model)
    count_checked = check_count(args.model, args.image_size, args.classes, n_params)
    layout = torch.channels_last if args.channels_last else torch.contiguous_format
    model = model.to(device=device, memory_format=layout)
    model.train()
    opt = make_optimizer(args, model.parameters())

    # Synthetic data, made once on the device.
    x = torch.randn(args.batch, 3, args.image_size, args.image_size, device=device)
    x = x.contiguous(memory_format=layout)
    y = torch.randint(0, args.classes, (args.batch,), device=device)

    net = torch.compile(model, mode=args.compile_mode) if args.compile else model
    amp_dtype = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[args.precision]
    scaler = None
    if args.precision == "fp16":
        scaler = torch.amp.GradScaler("cuda") if hasattr(torch, "amp") and hasattr(torch.amp, "GradScaler") \
            else torch.cuda.amp.GradScaler()

    def autocast():
        if amp_dtype is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type=device.type, dtype=amp_dtype)

    def sync():
        if cuda:
            torch.cuda.synchronize(device)

    def step():
        opt.zero_grad(set_to_none=True)
        with autocast():
            logits = net(x)
        loss = F.cross_entropy(logits.float(), y)  # outside autocast, on float32 logits
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
        else:
            loss.backward()
            opt.step()
        return loss.item() if not args.no_loss_item else loss

    sync()
    t0 = time.perf_counter()
    last = step()  # the first step: compilation, cuDNN plans, allocator growth
    sync()
    first_step_s = time.perf_counter() - t0
    for _ in range(args.warmup):
        last = step()
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats(device)

    per_step = []
    for r in range(args.repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(args.steps):
            last = step()
        sync()
        per_step.append((time.perf_counter() - t0) / args.steps)
        log(f"{args.model} {args.precision} repeat {r + 1}/{args.repeats}: {per_step[-1] * 1e3:.3f} ms/step")
    final_loss = float(last) if not torch.is_tensor(last) else float(last.item())
    median = statistics.median(per_step)

    record = {
        "impl": "pytorch",
        "label": args.label,
        "model": args.model,
        "arch": "torchvision" if tv is not None else "builtin",
        "params": n_params,
        "params_match_dynamix": True if count_checked else None,
        "batch": args.batch,
        "image_size": args.image_size,
        "classes": args.classes,
        "precision": args.precision,
        "channels_last": args.channels_last,
        "compile": args.compile,
        "compile_mode": args.compile_mode,
        "cudnn_benchmark": args.cudnn_benchmark if cuda else None,
        "optimizer": f"sgd(lr={args.lr}, momentum={args.momentum})",
        "optimizer_impl": args.optimizer_impl,
        "loss_item_every_step": not args.no_loss_item,
        "images_per_s": args.batch / median,
        "step_ms_median": median * 1e3,
        "step_ms_min": min(per_step) * 1e3,
        "step_ms_repeats": [round(s * 1e3, 4) for s in per_step],
        "steps": args.steps,
        "warmup": args.warmup,
        "repeats": args.repeats,
        "first_step_s": first_step_s,
        "final_loss": final_loss,
        "loss_finite": math.isfinite(final_loss),
        "peak_mem_mb": torch.cuda.max_memory_allocated(device) / 2**20 if cuda else None,
        "device": args.device,
        "device_name": torch.cuda.get_device_name(device) if cuda else "cpu",
        "threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "torchvision": tv.__version__ if tv is not None else None,
        "tf32_matmul": _setting(lambda: torch.backends.cuda.matmul.allow_tf32),
        "tf32_cudnn": _setting(lambda: torch.backends.cudnn.allow_tf32),
    }
    print(json.dumps(record), flush=True)
    if not math.isfinite(final_loss) and scaler is None:
        raise SystemExit(f"pytorch_loop: the loss is not finite ({final_loss})")


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.verify_arch:
        verify_arch(args)
    else:
        run(args)


if __name__ == "__main__":
    main()
