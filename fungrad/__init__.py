"""fungrad: JAX's function transformations in pure Python on NumPy."""
from fungrad import core, tree_util, lax
from fungrad.api import (make_jaxpr, eval_shape, ShapeDtypeStruct, jvp, vjp, linearize,
                         linear_transpose, grad, value_and_grad, jacfwd, jacrev, jacobian, hessian,
                         vmap, stop_gradient, fwd_and_bwd)
from fungrad.jitting import jit
from fungrad import stages
from fungrad.export import export
from fungrad.custom_derivatives import custom_jvp, custom_vjp, custom_gradient, closure_convert
from fungrad import ad_checkpoint, custom_batching
from fungrad.ad_checkpoint import checkpoint, remat, checkpoint_policies
from fungrad.core import float0, Array, UnexpectedTracerError, ConcretizationTypeError, typeof
from fungrad import numpy
from fungrad import random, optim, nn, scipy, implicit, ode, tree, flatten_util, extend
from fungrad import sharding, distributed
from fungrad.core import Device
from fungrad.sharding import (device_put, device_get, make_mesh, block_until_ready, P,
                              make_array_from_callback, make_array_from_single_device_arrays,
                              make_array_from_process_local_data, NamedSharding, Shard,
                              set_mesh, reshard)
from fungrad.shard_map import shard_map, smap
from fungrad.pmapping import pmap
from fungrad.distributed.cluster import (devices, local_devices, device_count,
                                         local_device_count, default_backend, process_index,
                                         process_count, process_indices, host_id, host_count,
                                         host_ids)
# configuration and debugging (as jax.config, jax.debug, ...)
from fungrad._config import (config, enable_x64, debug_nans, debug_infs, log_compiles,
                             check_tracer_leaks,
                             default_matmul_precision, numpy_rank_promotion,
                             numpy_dtype_promotion, threefry_partitionable,
                             explain_cache_misses, no_tracing, enable_checks)
from fungrad.environment import (disable_jit, ensure_compile_time_eval, default_device,
                                 clear_caches, live_arrays, print_environment_info,
                                 copy_to_host_async, effects_barrier)
from fungrad.callback import pure_callback
from fungrad.profiler import named_scope, named_call
from fungrad import debug, dtypes, typing, errors, profiler, checkify, experimental
from fungrad import ops, image, monitoring, dlpack
from fungrad import ref
from fungrad import ad                      # (jax.ad: with_refs' markers; not interpreters.ad)
from fungrad.ref import Ref, new_ref, empty_ref, free_ref, freeze
from fungrad import _config as _config_module, _memory as _memory_module

__version__ = "0.1.0"

# fungrad_keep_freed_memory (on by default; FUNGRAD_KEEP_FREED_MEMORY=0 leaves the
# C library's allocator untouched): see fungrad/_memory.py
if _config_module.keep_freed_memory.value:
    _memory_module.keep_freed_memory(True)
