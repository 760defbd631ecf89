"""Benchmark and test models, written in plain NumPy with no fusejit imports.

``MODELS`` maps a workload name to ``(module, function name)``. Each module has
``make_inputs(dtype=np.float32, size="small"|"quick"|"bench", seed=0) -> (args, kwargs)``;
``gpt2`` and ``gpt2_decode`` take their inputs from ``gpt2_block.make_gpt2_inputs`` and
``make_decode_inputs`` (see :func:`load`).
"""
from . import adam, attention, conv, elementwise, gelu, gpt2_block, layernorm, lstm, mlp, mlp_train
from . import softmax as softmax_module

MODELS = {
    "mlp": (mlp, "mlp"),
    "gelu": (gelu, "gelu"),
    "gelu_f32": (gelu, "gelu_f32"),
    "elementwise": (elementwise, "elementwise"),
    "softmax": (softmax_module, "softmax"),
    "layernorm": (layernorm, "layer_norm"),
    "attention": (attention, "attention"),
    "gpt2_block": (gpt2_block, "block"),
    "gpt2": (gpt2_block, "gpt2"),
    "gpt2_decode": (gpt2_block, "decode_step"),
    "lstm": (lstm, "lstm"),
    "conv": (conv, "conv2d_relu"),
    "mlp_train": (mlp_train, "train_step"),
    "adam": (adam, "adam_step"),
}

# Workloads whose inputs do not come from the module's ``make_inputs``.
INPUT_MAKERS = {"gpt2": "make_gpt2_inputs", "gpt2_decode": "make_decode_inputs"}

# Python-int arguments that select the program (static either way; named for clarity).
STATIC_ARGNAMES = {"attention": ("n_head",), "gpt2_block": ("n_head",), "gpt2": ("n_head",),
                   "gpt2_decode": ("n_head",)}

# Workloads that update their arguments in place (the harness gives each run fresh copies).
MUTATES_ARGS = frozenset({"mlp_train", "gpt2_decode", "adam"})


def load(name):
    """``(fn, make_inputs)`` for the workload ``name``."""
    module, fn_name = MODELS[name]
    make_inputs = getattr(module, INPUT_MAKERS.get(name, "make_inputs"))
    return getattr(module, fn_name), make_inputs
