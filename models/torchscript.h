// DYNAMIX — a model scripted or traced in Python (torch.jit.save), trained like a built-in one.
#pragma once

#include <exception>
#include <string>

#include "models/model.h"

namespace dynamix {

// `model: torchscript:PATH` names a TorchScript file.
inline constexpr char kTorchScriptPrefix[] = "torchscript:";

// Loads a module written by torch.jit.save (scripted or traced). Its parameters and buffers become
// this nn::Module's, under the names PyTorch's state_dict gives them (conv1.weight, bn.running_mean),
// as the same tensors: the TorchScript forward reads what the optimizer updates, gradient hooks,
// checkpoints, device and dtype moves act on both. forward(x) must return a tensor; a forward(x, y)
// whose y defaults to None may also return the loss for targets y (has_own_loss()). Throws
// dynamix::Error naming the path when the file is missing or is not TorchScript.
ModelPtr load_torchscript_model(const std::string& path);

// LibTorch's message on one line: the interpreter's "RuntimeError: ..." line of a TorchScript
// traceback, else the first line, without C++ backtraces.
std::string torchscript_error_line(const std::exception& e);

}  // namespace dynamix
