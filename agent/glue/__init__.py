# SPDX-License-Identifier: MIT
# The glue: the Python half of libtpagent.so, compiled into it and run at
# boot as the package _trainparity_glue (agent/boot.c).
#
# It wraps torch APIs and calls the C agent (`_tp`, module
# _trainparity_agent): it decides *when* to observe and *what* to hand
# over; flattening, digests, statistics, encoding and sending are C.  Every
# wrapper returns what the wrapped function returned and raises what it
# raised; the wrapper's own failures go to _tp.error and never reach user
# code.  Nothing here changes a value the training computes with.
#
# One module per hook family, each importing only modules executed before
# it; agent/CMakeLists.txt lists them in the order boot.c executes them:
#   core      the bridge, the training state S, re-entry guard, wrapping
#   config    the configuration (agent/config.c parses it; the one reader)
#   state     the training state named as a checkpoint names it; snapshots
#   restore   restore events (load_state_dict, RNG setters and seeds)
#   modules   the nn.Module registry
#   rng       RNG setters and seeds
#   optim     Optimizer.step, zero_grad, clipping
#   sched     LR schedulers
#   backward  backward calls and loss element counts
#   dropout   TRAINPARITY_DISABLE_DROPOUT
#   save      torch.save/load, safetensors
#   amp       GradScaler
#   dist      ranks and world size
#   data      DataLoader batches and sample IDs
#   install   installs the hooks and boots (executed last)
# This package itself defines nothing.
