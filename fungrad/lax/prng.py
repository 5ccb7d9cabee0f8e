"""Random-number primitives: ``threefry2x32`` and ``random_sample``, each with
all of its rules (the samplers of ``fungrad.random`` are built on them).

* ``threefry2x32_p(k0, k1, x0, x1) -> (y0, y1)``: the Threefry-2x32 block
  cipher (20 rounds) on uint32 arrays that broadcast together, elementwise
  (JAX has a primitive of that name and signature).
* ``random_sample_p(keys; shape, dtype, transform, partitionable)``: the
  samples of ``shape`` drawn from each key of ``keys`` (uint32, ``(..., 2)``;
  the leading dimensions are a batch of keys), in one of four transforms of
  the key's Threefry stream (``kernels/prng.py``'s ``sample`` defines them):
  its bits, floats on [0, 1), floats on (-1, 1), standard normals by the
  inverse CDF -- JAX's ``random_bits``, ``uniform`` and ``normal`` bit for bit
  (normals: XLA's erf_inv, where ``kernels/prng.py``'s ``exact_draw`` says
  so: at every size when numba is installed), in either of JAX's stream layouts.

Why one primitive for a whole sample rather than Threefry then lax ops: a
NumPy program cannot fuse operations, and 25 million float64 normals built
from separate lax ops make a dozen passes over 200 MB arrays. The impl
computes chunk by chunk, in cache, and writes each sample once.

Rules: both primitives have integer inputs only, so their derivatives are
zero (``defjvp_zero``); they are not linear. Batching moves the batch axis of
the keys (or of the broadcast operands) to the front, which the impls map
over. Impl and lowering are one NumPy-only kernel each (``kernels/prng.py``,
which uses ``kernels/xla_cpu_math.py`` (with ``xla_cpu_numba.py``'s compiled
functions for large arrays once loaded) or, for large draws without numba,
``kernels/special.py``'s ErfInvWriter for normals), so ``jit`` and ``export``
run the same code (exported code: NumPy only). The compiled jit backend's
rules (``numba_block``, ``numba_lowering``) call ``xla_cpu_numba.py``'s
kernels, which compute the same words and floats as the NumPy kernels (their
source is each program's ``numba_prelude``); the transform codes they take
are ``TRANSFORMS``' positions.
"""
from __future__ import annotations

import math

import numpy as np

from fungrad._dtype_classes import kind as dtype_kind
from fungrad.core import Primitive, ShapedArray, get_aval
from fungrad.interpreters import batching
from fungrad.interpreters.ad import defjvp, defjvp2, defjvp_zero
from fungrad.lax import elementwise as _elementwise
from fungrad.lax.kernels import prng as _kernel
from fungrad.lax.kernels import xla_cpu_math as _xla_math
from fungrad.lax import xla_cpu_numba as _xla_numba
from fungrad.lax.utils import as_operand, broadcast_shapes, checked_bind, def_kernel

__all__ = ["rng_bit_generator", "threefry2x32_p", "random_sample_p", "random_fma_p",
           "random_log_p", "random_log1p_p", "random_exp_p", "random_tan_p",
           "random_pow_p", "random_erf_p", "random_erf_inv_p", "random_loop_log_p"]

_U32 = np.dtype(np.uint32)
# large exact draws: the kernels load numba's functions through this (see
# kernels/prng.py's exact_draw; a kernel module imports nothing but NumPy)
_xla_math.COMPILED_LOADER[0] = _xla_numba
TRANSFORMS = ("bits", "unit", "signed", "normal")


# ----------------------------------------------------------------------------
# threefry2x32
# ----------------------------------------------------------------------------

def _threefry_shape(k0, k1, x0, x1):
    for name, aval in zip(("k0", "k1", "x0", "x1"), (k0, k1, x0, x1)):
        if aval.dtype != _U32:
            raise TypeError(f"threefry2x32: `{name}` must be uint32, got {aval.dtype}; "
                            "convert with lax.convert_element_type(x, np.uint32).")
    shape = broadcast_shapes("threefry2x32", k0.shape, k1.shape, x0.shape, x1.shape)
    return [ShapedArray(shape, _U32), ShapedArray(shape, _U32)]


threefry2x32_p = Primitive("threefry2x32", multiple_results=True, differentiable=False)
def_kernel(threefry2x32_p, _kernel.threefry2x32)
threefry2x32_p.def_abstract_eval(_threefry_shape)
defjvp_zero(threefry2x32_p)


# elementwise with broadcasting: the n-ary ops' rule, for both results
_broadcasting_rule = batching.broadcasting_batcher(threefry2x32_p)


def _threefry_batch(axis_size, vals, dims):
    outs, dim = _broadcasting_rule(axis_size, vals, dims)
    return outs, [dim, dim]


threefry2x32_p.batch = _threefry_batch


def _threefry_numba(block, eqn, args, out_names):
    """The compiled jit backend's threefry2x32 (xla_cpu_numba's kernels: the
    same words as the NumPy kernel): on scalars, or operands broadcast to the
    result's shape."""
    (y0, y1), shape = out_names, tuple(int(d) for d in eqn.outvars[0].aval.shape)
    if shape == ():
        block.line(f"{y0}, {y1} = threefry_u32({', '.join(args)})")
        return
    operands = [a if v.aval.shape == shape else
                f"np.full({shape!r}, {a}, np.uint32)" if v.aval.shape == () else
                f"np.broadcast_to({a}, {shape!r})" for a, v in zip(args, eqn.inputs)]
    block.line(f"{y0} = np.empty({shape!r}, np.uint32)")
    block.line(f"{y1} = np.empty({shape!r}, np.uint32)")
    block.line(f"threefry_into({', '.join(operands)}, {y0}, {y1})")


threefry2x32_p.numba_block = _threefry_numba
# (the compiled backend's code calls xla_cpu_numba's kernels: their source
# is written into each program that uses them)
_XLA_PRELUDE = ("xla_cpu", _xla_numba.kernels_source)
threefry2x32_p.numba_prelude = _XLA_PRELUDE


def threefry2x32(k0, k1, x0, x1):
    """``(y0, y1)``: Threefry-2x32 of the pairs ``(x0, x1)`` under keys ``(k0, k1)``."""
    return checked_bind(threefry2x32_p, *(as_operand(a) for a in (k0, k1, x0, x1)))


# ----------------------------------------------------------------------------
# random_sample
# ----------------------------------------------------------------------------

def _sample_shape(keys, shape, dtype, transform, partitionable):
    if keys.dtype != _U32 or keys.shape[-1:] != (2,):
        raise TypeError(f"random_sample: `keys` must be uint32 of shape (..., 2), got "
                        f"{keys.dtype} of shape {keys.shape}.")
    dtype = np.dtype(dtype)
    kinds = "u" if transform == "bits" else "f"
    if transform not in TRANSFORMS or dtype_kind(dtype) not in kinds:
        raise TypeError(f"random_sample: transform {transform!r} with dtype {dtype} is not "
                        f"one of 'bits' (unsigned dtypes) or {TRANSFORMS[1:]} (float dtypes).")
    blocks = math.prod(shape) * (2 if dtype.itemsize == 8 and not partitionable else 1)
    if blocks > _kernel.MAX_WORDS:
        raise ValueError(f"random_sample: {math.prod(shape)} samples of {dtype} need "
                         f"{blocks} Threefry blocks, more than fungrad's limit of "
                         f"2**32 per key; split the key and draw several smaller arrays.")
    return ShapedArray(tuple(keys.shape[:-1]) + tuple(shape), dtype)


def _sample_batch(axis_size, vals, dims, **params):
    (keys,), (dim,) = vals, dims
    return random_sample_p.bind(batching.moveaxis(keys, dim, 0), **params), 0


def _sample_numba(block, eqn, args, out_names):
    """The compiled jit backend's random_sample for 32- and 64-bit samples
    (xla_cpu_numba's ``sample32``/``sample64``: kernels/prng.py's ``sample``,
    sample for sample, normals by XLA's erf_inv as an exact draw; narrower
    dtypes stay on NumPy)."""
    from fungrad.interpreters.numba_backend import NotCompilable
    params, (keys,), (out,) = eqn.params, args, out_names
    dtype, keys_aval = np.dtype(params["dtype"]), eqn.inputs[0].aval
    if dtype.itemsize not in (4, 8):
        raise NotCompilable(f"random_sample of {dtype}")
    kernel = "sample64" if dtype.itemsize == 8 else "sample32"
    rows, size = math.prod(keys_aval.shape[:-1]), math.prod(params["shape"])
    out_shape = tuple(int(d) for d in eqn.outvars[0].aval.shape)
    call = (f"{kernel}(np.ascontiguousarray({keys}).reshape(({rows}, 2)), {size}, "
            f"{TRANSFORMS.index(params['transform'])}, {bool(params['partitionable'])}, "
            f"np.empty(({rows * size},), np.{dtype.name}))")
    block.line(f"{out} = {call}[0]" if out_shape == () else
               f"{out} = {call}.reshape({out_shape!r})")


random_sample_p = Primitive("random_sample")
def_kernel(random_sample_p, _kernel.sample)
random_sample_p.def_abstract_eval(_sample_shape)
defjvp_zero(random_sample_p)
random_sample_p.batch = _sample_batch
random_sample_p.numba_block = _sample_numba
random_sample_p.numba_prelude = _XLA_PRELUDE


def random_sample(key, shape, dtype, transform, partitionable=True):
    """Samples of ``shape`` and ``dtype`` from ``key`` (uint32, ``(..., 2)``);
    ``transform`` is 'bits', 'unit', 'signed' or 'normal' (see the module doc);
    ``partitionable``: JAX's stream layout (``jax_threefry_partitionable``)."""
    return checked_bind(random_sample_p, as_operand(key), shape=tuple(int(n) for n in shape),
                        dtype=np.dtype(dtype).name, transform=transform,
                        partitionable=bool(partitionable))


# ----------------------------------------------------------------------------
# random_fma: a * b + c rounded once
# ----------------------------------------------------------------------------
# JAX's uniform computes ``unit * (maxval - minval) + minval`` and XLA's CPU
# backend fuses it into one fused multiply-add, so reproducing JAX's bounded
# uniforms (and truncated_normal, cauchy, ...) bit for bit needs an FMA, which
# NumPy lacks: the kernel emulates it exactly.

# not wide: the kernel rounds bfloat16/float8 twice itself, as XLA does
random_fma_p = _elementwise._nary("random_fma", _kernel.fma, _elementwise.FLOAT, num_args=3,
                                  wide=False)
defjvp(random_fma_p,
       lambda g, a, b, c: _elementwise._brcast(_elementwise.mul(g, b), c),
       lambda g, a, b, c: _elementwise._brcast(_elementwise.mul(a, g), c),
       lambda g, a, b, c: _elementwise._brcast(g, a, b))


def random_fma(a, b, c):
    """``a * b + c`` rounded once (float operands of one dtype, broadcasting)."""
    return checked_bind(random_fma_p, *(as_operand(x) for x in (a, b, c)))


# ----------------------------------------------------------------------------
# XLA's CPU log, log1p, exp, tan, pow, erf, erf_inv, for the samplers
# ----------------------------------------------------------------------------
# JAX's samplers pass their uniforms through these, and XLA's CPU code for them
# is not NumPy's (nor fungrad's lax ops'): its own polynomials, fused
# multiply-adds, the C library's float64 log and erf (kernels/xla_cpu_math.py
# emulates them). Samplers use these primitives for JAX's numbers exactly; the
# derivatives are the functions' own.

def _xla_unary(name, kernel, jvp=None, jvp_of_answer=None):
    p = _elementwise._unary(f"random_{name}", kernel, _elementwise.FLOAT)
    if jvp is not None:
        defjvp(p, jvp)
    else:
        defjvp2(p, jvp_of_answer)
    return p


_e = _elementwise
random_log_p = _xla_unary("log", _xla_math.log, lambda g, x: _e.div(g, x))
random_log1p_p = _xla_unary("log1p", _xla_math.log1p,
                            lambda g, x: _e.div(g, _e.add(x, _e._const(x, 1))))
random_exp_p = _xla_unary("exp", _xla_math.exp, jvp_of_answer=lambda g, ans, x: _e.mul(g, ans))
random_tan_p = _xla_unary("tan", _xla_math.tan, jvp_of_answer=lambda g, ans, x: _e.mul(
    g, _e.add(_e._const(x, 1), _e.square(ans))))
random_pow_p = _elementwise._nary("random_pow", _xla_math.power, _elementwise.FLOAT)
defjvp2(random_pow_p, _elementwise._pow_jvp_base, _elementwise._pow_jvp_exponent)
random_erf_p = _xla_unary("erf", _xla_math.erf, lambda g, x: _e.mul(g, _e.mul(
    _e._const(x, 2 / math.sqrt(math.pi)), _e.exp(_e.neg(_e.square(x))))))
random_rsqrt_p = _xla_unary("rsqrt", _xla_math.rsqrt, jvp_of_answer=lambda g, ans, x: _e.mul(
    g, _e.mul(_e._const(x, -0.5), _e.mul(ans, _e.div(ans, x)))))
# XLA's float32 log computed in a loop of its own over all of its operand's
# elements: which elements the C library computes depends on their position
# in the whole (batched) array, so it is not elementwise under vmap
random_loop_log_p = _xla_unary("loop_log", _xla_math.loop_log,
                               lambda g, x, **params: _e.div(g, x))


def _loop_log_batch(axis_size, vals, dims, alone, alone_if_batched):
    # JAX's batched loop runs over the keys' draws one after another, and its
    # fusion of the batched program may differ (alone_if_batched)
    (x,), (dim,) = vals, dims
    return random_loop_log_p.bind(batching.moveaxis(x, dim, 0), alone=alone_if_batched,
                                  alone_if_batched=alone_if_batched), 0


def _loop_log_numba(block, eqn, args, out_names):
    """xla_cpu_numba's ``loop_log_f32`` on the whole (flat) float32 operand."""
    from fungrad.interpreters.numba_backend import NotCompilable
    aval, (x,), (out,) = eqn.inputs[0].aval, args, out_names
    if np.dtype(aval.dtype) != np.float32:
        raise NotCompilable(f"random_loop_log of {aval.dtype}")
    shape = tuple(int(d) for d in aval.shape)
    if shape == ():
        block.line(f"{out} = log_f32({x})")
    else:
        block.line(f"{out} = loop_log_f32(np.ascontiguousarray({x}).reshape(-1), "
                   f"{bool(eqn.params['alone'])}).reshape({shape!r})")


random_loop_log_p.batch = _loop_log_batch
random_loop_log_p.numba_block = _loop_log_numba
random_loop_log_p.numba_prelude = _XLA_PRELUDE
random_erf_inv_p = _xla_unary("erf_inv", _xla_math.erf_inv, jvp_of_answer=lambda g, ans, x: _e.mul(
    g, _e.mul(_e._const(x, math.sqrt(math.pi) / 2), _e.exp(_e.square(ans)))))


def _xla_scalar_numba(kernel):
    """The compiled backend's form on float32/float64 scalars (fused loops):
    xla_cpu_numba's scalar kernel, the same numbers as the NumPy emulation."""
    def lowering(args, in_avals, out_avals):
        dtype = np.dtype(out_avals[0].dtype)
        if any(a.shape != () for a in list(in_avals) + list(out_avals)) or \
                dtype not in _xla_numba._SUFFIX:
            return None
        return f"{kernel}_{_xla_numba._SUFFIX[dtype]}({', '.join(args)})"
    return lowering


for _p, _kernel_name in ((random_fma_p, "fma"), (random_log_p, "log"),
                         (random_log1p_p, "log1p"), (random_exp_p, "exp"),
                         (random_tan_p, "tan"), (random_pow_p, "pow"), (random_erf_p, "erf"),
                         (random_rsqrt_p, "rsqrt"), (random_erf_inv_p, "erf_inv")):
    _p.numba_lowering = _xla_scalar_numba(_kernel_name)
    _p.numba_elementwise = True
    _p.numba_prelude = _XLA_PRELUDE


def random_log(x):
    """XLA's CPU ``log`` (float operands), bit for bit."""
    return checked_bind(random_log_p, as_operand(x))


def random_log1p(x):
    """XLA's CPU ``log1p`` (float operands), bit for bit."""
    return checked_bind(random_log1p_p, as_operand(x))


def random_exp(x):
    """XLA's CPU ``exp`` (float operands), bit for bit."""
    return checked_bind(random_exp_p, as_operand(x))


def random_tan(x):
    """XLA's CPU ``tan`` (float operands), bit for bit: the C library's."""
    return checked_bind(random_tan_p, as_operand(x))


def random_pow(x, y):
    """XLA's CPU ``pow`` (float operands of one dtype), bit for bit: the C library's."""
    return checked_bind(random_pow_p, as_operand(x), as_operand(y))


def random_erf(x):
    """XLA's CPU ``erf`` (float operands), bit for bit."""
    return checked_bind(random_erf_p, as_operand(x))


def random_rsqrt(x):
    """XLA's CPU ``rsqrt`` (float operands), bit for bit on the CPU model the
    kernel's estimate tables were measured on (see kernels/xla_cpu_math.py)."""
    return checked_bind(random_rsqrt_p, as_operand(x))


def random_loop_log(x, alone=True, alone_if_batched=True):
    """XLA's CPU float32 ``log`` of ``x``; if ``alone``, as a loop of its own
    over all its elements (the last elements of a short loop by the C
    library's ``logf``); under vmap ``alone_if_batched`` decides."""
    return checked_bind(random_loop_log_p, as_operand(x), alone=bool(alone),
                        alone_if_batched=bool(alone_if_batched))


def random_erf_inv(x):
    """XLA's CPU ``erf_inv`` (float operands), bit for bit."""
    return checked_bind(random_erf_inv_p, as_operand(x))


# ----------------------------------------------------------------------------
# rng_bit_generator: XLA's stateless bit generator, on Threefry
# ----------------------------------------------------------------------------
# XLA leaves the bits to the platform; here the uint32[4] key's two halves,
# xor-ed, key a Threefry stream: counter words (0, 0) and (0, 1) give the new
# key, (0, 2) the key of the bits.  Deterministic, and the new key's stream is
# independent of the bits returned.

def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=None, *, out_sharding=None):
    """``(new_key, bits)``: random bits of ``shape`` and unsigned ``dtype`` (uint8 to
    uint64) from a uint32[4] ``key`` (``jax.lax.rng_bit_generator``; the bits are
    fungrad's Threefry stream, as XLA's are its platform's; ``algorithm`` is
    accepted and the same generator is used for every value)."""
    from fungrad import lax
    k = as_operand(key)
    ka = get_aval(k)
    if ka.dtype != _U32 or ka.shape != (4,):
        raise TypeError(f"rng_bit_generator: key must be uint32 of shape (4,), got "
                        f"{ka.dtype.name}{list(ka.shape)}")
    dtype = np.dtype(dtype)
    if dtype not in (np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64)):
        raise TypeError(f"rng_bit_generator: dtype must be uint8, uint16, uint32 or uint64, got "
                        f"{dtype.name}")
    halves = lax.reshape(k, (2, 2))
    stream = lax.bitwise_xor(lax.index_in_dim(halves, 0, keepdims=False),
                             lax.index_in_dim(halves, 1, keepdims=False))
    k0, k1 = (lax.index_in_dim(stream, i, keepdims=False) for i in (0, 1))
    zeros = np.zeros(3, _U32)
    y0, y1 = threefry2x32(k0, k1, zeros, np.arange(3, dtype=_U32))
    new_key = lax.concatenate([lax.slice(y0, (0,), (2,)), lax.slice(y1, (0,), (2,))], 0)
    bits_key = lax.concatenate([lax.slice(y0, (2,), (3,)), lax.slice(y1, (2,), (3,))], 0)
    shape = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(n) for n in shape)
    return new_key, random_sample(bits_key, shape, dtype, "bits", False)
