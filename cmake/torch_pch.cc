// Anchor for the shared precompiled <torch/torch.h>.
#include <torch/torch.h>
