"""``jax.example_libraries.stax``: neural networks as pairs of functions.

A layer is ``(init_fun, apply_fun)``:

    init_fun(rng, input_shape) -> (output_shape, params)
    apply_fun(params, inputs, rng=None, **kwargs) -> outputs

and the combinators ``serial`` (composition), ``parallel`` (a list of inputs
through a list of layers), ``FanOut``/``FanInSum``/``FanInConcat`` (splitting
and joining) and ``shape_dependent`` build networks out of layers:

    init, apply = stax.serial(stax.Dense(32), stax.Relu, stax.Dense(1))
    out_shape, params = init(random.key(0), (-1, 8))
    y = apply(params, x)

Shapes may use -1 for the batch axis.  ``ConvTranspose``/``Conv1DTranspose``
are not provided.
"""
from __future__ import annotations

import functools

import numpy as np

import fungrad.numpy as jnp
from fungrad import lax, nn, random
from fungrad.api import ShapeDtypeStruct, eval_shape
from fungrad.nn.initializers import glorot_normal, normal, ones, zeros

__all__ = ["Dense", "GeneralConv", "Conv", "BatchNorm", "elementwise", "Tanh", "Relu", "Exp",
           "LogSoftmax", "Softmax", "Softplus", "Sigmoid", "Elu", "LeakyRelu", "Selu", "Gelu",
           "MaxPool", "SumPool", "AvgPool", "Flatten", "Identity", "FanOut", "FanInSum",
           "FanInConcat", "Dropout", "serial", "parallel", "shape_dependent"]


def _output_shape(apply, params, input_shape):
    """The output shape of ``apply(params, x)`` for x of ``input_shape`` (a -1
    batch axis is traced with size 1 and reported as -1)."""
    batch_is_free = len(input_shape) > 0 and input_shape[0] == -1
    concrete = (1,) + tuple(input_shape[1:]) if batch_is_free else tuple(input_shape)
    out = eval_shape(lambda x: apply(params, x), ShapeDtypeStruct(concrete, jnp.float64))
    return (-1,) + out.shape[1:] if batch_is_free else out.shape


# ----------------------------------------------------------------------------
# layers with parameters
# ----------------------------------------------------------------------------

def Dense(out_dim: int, W_init=glorot_normal(), b_init=normal()):
    """A fully connected layer: ``inputs @ W + b``."""
    def init_fun(rng, input_shape):
        k1, k2 = random.split(rng)
        params = W_init(k1, (input_shape[-1], out_dim)), b_init(k2, (out_dim,))
        return tuple(input_shape[:-1]) + (out_dim,), params

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return jnp.dot(inputs, W) + b
    return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan: int, filter_shape, strides=None,
                padding="VALID", W_init=None, b_init=normal(1e-6)):
    """A convolution with the layouts ``(lhs_spec, rhs_spec, out_spec)``, e.g.
    ``("NHWC", "HWIO", "NHWC")``, plus a bias per output channel."""
    lhs_spec, rhs_spec, out_spec = dimension_numbers
    one = (1,) * len(filter_shape)
    strides = strides or one
    W_init = W_init or glorot_normal(rhs_spec.index("I"), rhs_spec.index("O"))

    def apply_fun(params, inputs, **kwargs):
        W, b = params
        return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                        dimension_numbers=dimension_numbers) + b

    def init_fun(rng, input_shape):
        filters = iter(filter_shape)
        kernel_shape = [out_chan if c == "O" else input_shape[lhs_spec.index("C")] if c == "I"
                        else next(filters) for c in rhs_spec]
        bias_shape = [out_chan if c == "C" else 1 for c in out_spec]
        k1, k2 = random.split(rng)
        W, b = W_init(k1, kernel_shape), b_init(k2, bias_shape)
        return _output_shape(apply_fun, (W, b), input_shape), (W, b)
    return init_fun, apply_fun


Conv = functools.partial(GeneralConv, ("NHWC", "HWIO", "NHWC"))


def BatchNorm(axis=(0, 1, 2), epsilon: float = 1e-5, center: bool = True, scale: bool = True,
              beta_init=zeros, gamma_init=ones):
    """Standardize over ``axis`` with the batch's own statistics, then scale
    (gamma) and shift (beta) per remaining position."""
    axis = (axis,) if np.isscalar(axis) else tuple(axis)

    def init_fun(rng, input_shape):
        shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
        k1, k2 = random.split(rng)
        beta = beta_init(k1, shape) if center else ()
        gamma = gamma_init(k2, shape) if scale else ()
        return input_shape, (beta, gamma)

    def apply_fun(params, x, **kwargs):
        beta, gamma = params
        expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
        z = nn.standardize(x, axis, epsilon=epsilon)
        if scale:
            z = gamma[expand] * z
        if center:
            z = z + beta[expand]
        return z
    return init_fun, apply_fun


# ----------------------------------------------------------------------------
# elementwise layers, pooling, reshaping
# ----------------------------------------------------------------------------

def elementwise(fun, **fun_kwargs):
    """A layer without parameters applying ``fun(inputs, **fun_kwargs)``."""
    init_fun = lambda rng, input_shape: (input_shape, ())
    apply_fun = lambda params, inputs, **kwargs: fun(inputs, **fun_kwargs)
    return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(nn.relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(nn.log_softmax, axis=-1)
Softmax = elementwise(nn.softmax, axis=-1)
Softplus = elementwise(nn.softplus)
Sigmoid = elementwise(nn.sigmoid)
Elu = elementwise(nn.elu)
LeakyRelu = elementwise(nn.leaky_relu)
Selu = elementwise(nn.selu)
Gelu = elementwise(nn.gelu)


def _pooling_layer(reducer, init_val, normalize: bool = False):
    def PoolingLayer(window_shape, strides=None, padding="VALID", spec=None):
        window_shape = tuple(window_shape)
        strides = tuple(strides or (1,) * len(window_shape))
        non_spatial = (0, len(window_shape) + 1) if spec is None else \
            (spec.index("N"), spec.index("C"))
        dims, steps = window_shape, strides
        for i in sorted(non_spatial):
            dims, steps = dims[:i] + (1,) + dims[i:], steps[:i] + (1,) + steps[i:]

        def apply_fun(params, inputs, **kwargs):
            out = lax.reduce_window(inputs, init_val, reducer, dims, steps, padding)
            if not normalize:
                return out
            # the number of inputs in each window (padding counts as absent)
            sizes = lax.reduce_window(jnp.ones_like(inputs), 0.0, lax.add, dims, steps, padding)
            return out / sizes

        def init_fun(rng, input_shape):
            return _output_shape(apply_fun, (), input_shape), ()
        return init_fun, apply_fun
    return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.0)
AvgPool = _pooling_layer(lax.add, 0.0, normalize=True)


def _flatten_init(rng, input_shape):
    return (input_shape[0], int(np.prod(input_shape[1:]))), ()


Flatten = (_flatten_init, lambda params, inputs, **kwargs: jnp.reshape(inputs, (inputs.shape[0], -1)))
Identity = (lambda rng, input_shape: (input_shape, ()), lambda params, inputs, **kwargs: inputs)


def FanOut(num: int):
    """One input to ``num`` copies of it (for ``parallel``)."""
    init_fun = lambda rng, input_shape: ([input_shape] * num, ())
    apply_fun = lambda params, inputs, **kwargs: [inputs] * num
    return init_fun, apply_fun


FanInSum = (lambda rng, input_shape: (input_shape[0], ()),
            lambda params, inputs, **kwargs: functools.reduce(jnp.add, inputs))


def FanInConcat(axis: int = -1):
    """A list of inputs concatenated along ``axis``."""
    def init_fun(rng, input_shape):
        ax = axis % len(input_shape[0])
        size = sum(shape[ax] for shape in input_shape)
        return tuple(input_shape[0][:ax]) + (size,) + tuple(input_shape[0][ax + 1:]), ()
    apply_fun = lambda params, inputs, **kwargs: jnp.concatenate(inputs, axis)
    return init_fun, apply_fun


def Dropout(rate: float, mode: str = "train"):
    """In ``mode="train"`` keep each input with probability ``rate`` (JAX's
    stax: ``rate`` is the keep rate) and scale kept inputs by ``1/rate``;
    ``apply_fun`` then needs ``rng=``.  Any other mode is the identity."""
    def init_fun(rng, input_shape):
        return input_shape, ()

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.get("rng")
        if rng is None:
            raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                             "argument. That is, instead of `apply_fun(params, inputs)`, call "
                             "it like `apply_fun(params, inputs, rng=key)` where "
                             "`key = fungrad.random.key(0)`, for example.")
        if mode != "train":
            return inputs
        keep = random.bernoulli(rng, rate, inputs.shape)
        return jnp.where(keep, inputs / rate, 0)
    return init_fun, apply_fun


# ----------------------------------------------------------------------------
# combinators
# ----------------------------------------------------------------------------

def serial(*layers):
    """The composition of ``layers``; params is the list of their params."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        params = []
        for init in init_funs:
            rng, layer_rng = random.split(rng)
            input_shape, param = init(layer_rng, input_shape)
            params.append(param)
        return input_shape, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        for fun, param, layer_rng in zip(apply_funs, params, rngs):
            inputs = fun(param, inputs, rng=layer_rng, **kwargs)
        return inputs
    return init_fun, apply_fun


def parallel(*layers):
    """The i-th layer applied to the i-th of a list of inputs."""
    init_funs, apply_funs = zip(*layers)

    def init_fun(rng, input_shape):
        rngs = random.split(rng, len(layers))
        shapes, params = zip(*[init(r, shape) for init, r, shape
                               in zip(init_funs, rngs, input_shape)])
        return shapes, params

    def apply_fun(params, inputs, **kwargs):
        rng = kwargs.pop("rng", None)
        rngs = random.split(rng, len(layers)) if rng is not None else (None,) * len(layers)
        return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
    return init_fun, apply_fun


def shape_dependent(make_layer):
    """A layer chosen from the input shape: ``make_layer(shape) -> layer``."""
    def init_fun(rng, input_shape):
        return make_layer(input_shape)[0](rng, input_shape)

    def apply_fun(params, inputs, **kwargs):
        return make_layer(inputs.shape)[1](params, inputs, **kwargs)
    return init_fun, apply_fun
