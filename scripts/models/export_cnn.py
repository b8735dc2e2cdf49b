#!/usr/bin/python3
"""Write a TorchScript copy of DYNAMIX's built-in CNN (models/simple.cc), for `model: torchscript:PATH`.

The architecture and parameter names are the built-in's (scripts/pytorch/dynamix_ref.py Cnn), so
the copy starts from the built-in's exact weights either way:
  --seed S             PyTorch's default init under torch.manual_seed(S): the weights `model: cnn`
                       starts from with train.seed S (LibTorch 1.13 shares the generator and the init
                       formulas, drawn in the same module order; ddp_gradient_error.py checks it);
  --weights-from CKPT  the parameters of a DYNAMIX checkpoint of `model: cnn` (a trained model).
--loss-in-forward makes forward(x, y=None) return the mean cross-entropy when given targets y (for
`train.loss: module`), the logits otherwise.

  /usr/bin/python3 scripts/models/export_cnn.py cnn.pt --seed 42 [--shape 1 28 28 --classes 10]
"""
import argparse
import sys
from pathlib import Path
from typing import Optional

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pytorch"))
import dynamix_ref  # noqa: E402


class CnnWithLoss(dynamix_ref.Cnn):
    """The CNN whose forward also computes its loss when given targets."""

    def forward(self, x: torch.Tensor, y: Optional[torch.Tensor] = None) -> torch.Tensor:
        logits = self.logits(x)  # TorchScript has no super()
        return logits if y is None else F.cross_entropy(logits, y)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("output", help="the TorchScript file to write")
    ap.add_argument("--shape", type=int, nargs=3, default=[1, 28, 28], metavar=("C", "H", "W"),
                    help="per-sample input shape (default: Fashion-MNIST's 1 28 28)")
    ap.add_argument("--classes", type=int, default=10)
    init = ap.add_mutually_exclusive_group()
    init.add_argument("--seed", type=int, default=42, help="train.seed of the built-in run to match (default 42)")
    init.add_argument("--weights-from", metavar="CKPT", help="a DYNAMIX checkpoint of model: cnn")
    ap.add_argument("--loss-in-forward", action="store_true", help="forward(x, y) returns the loss")
    args = ap.parse_args()

    torch.manual_seed(args.seed)
    cls = CnnWithLoss if args.loss_in_forward else dynamix_ref.Cnn
    model = cls(args.shape[0], args.shape[1], args.shape[2], args.classes)
    if args.weights_from:
        try:
            model.load_state_dict(dynamix_ref.read_checkpoint_params(args.weights_from))
        except (OSError, ValueError, RuntimeError) as e:
            sys.exit(f"export_cnn.py: {args.weights_from}: {str(e).splitlines()[0]}")
    torch.jit.save(torch.jit.script(model), args.output)
    print(f"wrote {args.output}: CNN {tuple(args.shape)} -> {args.classes} classes, "
          f"{'weights of ' + args.weights_from if args.weights_from else f'initial weights of seed {args.seed}'}"
          f"{', forward(x, y) returns the loss' if args.loss_in_forward else ''}")


if __name__ == "__main__":
    main()
