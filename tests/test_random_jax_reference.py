"""fungrad.random against JAX's own streams, recorded once.

tests/data/prng_reference.json was written by tools/gen_prng_reference.py run
with real JAX 0.10.2 (fungrad never imports jax): every case is a sampler, its
arguments and two seeds, under jax_enable_x64 on and off and
jax_threefry_partitionable on and off. Integer and boolean results must match
bit for bit; so must floats that come from the bits by exact arithmetic
(uniform, and anything selecting among them), and floats that pass through
XLA's own float32 polynomials (normal's erf_inv, exponential's log1p, ...),
which fungrad.lax.kernels.xla_cpu_math emulates with IEEE arithmetic alone.
Floats that pass through the platform's C library (float64 log and erf, which
XLA's CPU code calls; pow, tan) or LAPACK may differ by an ulp or a few on
another machine, so they are compared in units in the last place (ULPS below:
per sampler and dtype, the largest difference measured against JAX, rounded
up, and at least 1).
"""
import builtins
import json
import os

import numpy as np
import pytest

import fungrad
import fungrad.random as random

_DATA = os.path.join(os.path.dirname(__file__), "data", "prng_reference.json")
with open(_DATA) as _f:
    REFERENCE = json.load(_f)

# Most ulps allowed between fungrad's and JAX's floats, per sampler, as
# (float32, float64); an ulp is that of the larger of the two values or of
# 1.0, whichever is larger (so below 1 in magnitude the bound is absolute). 0:
# bit for bit. Samplers not listed are exact in both (integers, booleans,
# uniform, normal, the gamma family, ...). LIBM: float32 exact, float64
# through the C library's log/erf (what XLA calls: this machine's glibc gave
# JAX's bits, another's may not). The gamma family goes through XLA's rsqrt,
# the CPU's estimate instruction (vrsqrtps, vrsqrt14pd) refined by Newton
# steps: xla_cpu_math emulates the AMD Zen 4 CPU the vectors were recorded on
# (JAX's own numbers differ on an Intel CPU). XLA's short float32 loops of a
# log of their own compute their last elements with the C library's logf
# (kernels/xla_cpu_math.py's loop_log; tests/test_random_small_float32.py
# checks 656 more small draws). 1 ulp allowed: the C library's
# pow and tan (float32 too: weibull_min,
# cauchy). multivariate_normal matches these small cases exactly; in float32
# from 8 dimensions on XLA's dot is YNNPACK's (its Cholesky is JAX's).
LIBM = (0, 1)
ULPS = {"normal": LIBM, "truncated_normal": LIBM, "exponential": LIBM, "gumbel": LIBM,
        "laplace": LIBM, "logistic": LIBM, "rayleigh": LIBM, "lognormal": LIBM,
        "pareto": LIBM, "wald": LIBM,
        "weibull_min": (1, 1), "cauchy": (1, 1)}


def allowed_ulps(fn, dtype):
    float32_ulps, float64_ulps = ULPS.get(fn, (0, 0))
    return float64_ulps if np.finfo(dtype).bits == 64 else float32_ulps


CASES = REFERENCE["cases"]


def _decode(value):
    if isinstance(value, dict):
        return np.asarray(value["array"], value["dtype"])
    if isinstance(value, list):
        return tuple(value)
    return value


@pytest.fixture
def config_as(request):
    saved = {n: fungrad.config.read(n) for n in ("jax_enable_x64", "jax_threefry_partitionable")}

    def set_config(x64, partitionable):
        fungrad.config.update("jax_enable_x64", x64)
        fungrad.config.update("jax_threefry_partitionable", partitionable)
    yield set_config
    for name, value in saved.items():
        fungrad.config.update(name, value)


def _case_id(case):
    return (f"{case['fn']}-{'x64' if case['x64'] else 'x32'}-"
            f"{'part' if case['partitionable'] else 'orig'}-s{case['seed']}-"
            f"{json.dumps([case['args'], case['kwargs']], separators=(',', ':'))[:40]}")


def ulp_distance(a, b):
    """Units in the last place between same-dtype float arrays (0 where equal),
    ulps of at least 1.0 (see ULPS)."""
    a, b = np.asarray(a), np.asarray(b)
    info = np.finfo(a.dtype)
    spacing = np.spacing(np.maximum(np.maximum(np.abs(a), np.abs(b)), 1).astype(a.dtype))
    spacing = np.maximum(spacing, info.smallest_subnormal)
    with np.errstate(invalid="ignore"):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64)) / spacing.astype(np.float64)
    both_nan = np.isnan(a) & np.isnan(b)
    return np.where(both_nan | (a == b), 0.0, diff)


def run_case(case):
    key = random.PRNGKey(case["seed"])
    args = [_decode(a) for a in case["args"]]
    kwargs = {k: _decode(v) for k, v in case["kwargs"].items()}
    return getattr(random, case["fn"])(key, *args, **kwargs)


def check_against(case, got):
    want = case["out"]
    got = np.asarray(got)
    assert got.dtype.name == want["dtype"] and list(got.shape) == want["shape"]
    if got.dtype.kind == "c":
        parts = [(got.real, want["real"]), (got.imag, want["imag"])]
    else:
        parts = [(got, want["values"])]
    for mine, theirs in parts:
        theirs = np.asarray(theirs, mine.dtype).reshape(mine.shape)
        allowed = allowed_ulps(case["fn"], mine.dtype) if mine.dtype.kind == "f" else 0
        if allowed:
            ulps = ulp_distance(mine, theirs)
            assert ulps.max(initial=0) <= allowed, (mine, theirs, ulps)
        else:
            np.testing.assert_array_equal(mine, theirs)


@pytest.mark.parametrize("case", CASES, ids=_case_id)
def test_matches_jax(case, config_as):
    config_as(case["x64"], case["partitionable"])
    if "error" in case["out"]:
        with pytest.raises(getattr(builtins, case["out"]["error"])):
            run_case(case)
        return
    check_against(case, run_case(case))


def _call(case):
    args = [_decode(a) for a in case["args"]]
    kwargs = {k: _decode(v) for k, v in case["kwargs"].items()}
    return lambda key: getattr(random, case["fn"])(key, *args, **kwargs)


# jit and vmap: the basic samplers, default x64, both layouts
TRANSFORMED = [c for c in CASES if c["x64"] and "error" not in c["out"] and c["seed"] == 0
               and c["fn"] in {"split", "fold_in", "bits", "uniform", "normal",
                               "truncated_normal", "bernoulli", "categorical", "randint",
                               "permutation", "choice", "gumbel", "exponential", "gamma",
                               "poisson", "binomial"}]


@pytest.mark.parametrize("case", TRANSFORMED, ids=_case_id)
def test_matches_jax_under_jit_and_vmap(case, config_as):
    config_as(case["x64"], case["partitionable"])
    f = _call(case)
    check_against(case, fungrad.jit(f)(random.PRNGKey(case["seed"])))
    twin = next(c for c in REFERENCE["cases"] if c["seed"] == 7 and all(
        c[k] == case[k] for k in ("fn", "args", "kwargs", "x64", "partitionable")))
    keys = fungrad.numpy.stack([random.PRNGKey(0), random.PRNGKey(7)])
    batched = np.asarray(fungrad.vmap(f)(keys))
    check_against(case, batched[0])
    check_against(twin, batched[1])


@pytest.mark.parametrize("entry", REFERENCE["seeds"],
                         ids=lambda e: f"{'x64' if e['x64'] else 'x32'}-{e['seed']}")
def test_seeds_of_every_size_make_jax_keys(entry, config_as):
    config_as(entry["x64"], True)
    seed = int(entry["seed"])
    if isinstance(entry["key"], str):
        with pytest.raises(getattr(builtins, entry["key"])):
            random.PRNGKey(seed)
        return
    np.testing.assert_array_equal(random.PRNGKey(seed), np.array(entry["key"], np.uint32))
    np.testing.assert_array_equal(random.key_data(random.key(seed)), entry["key"])
