"""jit's ahead-of-time stages, as JAX's: jit(f).trace(...) -> Traced (.jaxpr,
.out_info, .lower()), .lower(...) -> Lowered (args_info, out_info, in_tree,
out_tree, source), .compile() -> Compiled (called with the arguments it was
compiled for; other shapes or structures refused with JAX's error), and
jit(f).eval_shape(...); ShapeDtypeStruct leaves stand for arrays anywhere."""
import numpy as np
import pytest

import fungrad
import fungrad.numpy as fnp
from fungrad import ShapeDtypeStruct as S


def model(params, x, *, scale=1.0):
    return {"y": fnp.tanh(x @ params["w"] + params["b"]) * scale, "n": fnp.sum(x)}


JITTED = fungrad.jit(model, static_argnames="scale")
PARAMS = {"w": S((3, 2), np.float32), "b": S((2,), np.float32)}


def test_trace_lower_compile_with_shape_dtype_structs():
    traced = JITTED.trace(PARAMS, S((5, 3), np.float32), scale=2.0)
    assert traced.fun_name == "model"
    assert [a.str_short() for a in traced.jaxpr.in_avals] == ["f32[2]", "f32[3,2]", "f32[5,3]"]
    assert traced.out_info == {"y": S((5, 2), np.float32), "n": S((), np.float32)}
    lowered = traced.lower()
    (args_info, kwargs_info) = lowered.args_info
    assert kwargs_info == {} and args_info[0]["w"].shape == (3, 2)
    assert args_info[1].dtype == np.float32 and not args_info[1].donated
    assert lowered.out_tree == fungrad.tree_util.tree_structure({"y": 0, "n": 0})
    assert lowered.in_tree == fungrad.tree_util.tree_structure(((PARAMS, 0), {}))
    assert "np.tanh" in lowered.source()
    compiled = lowered.compile()
    rng = np.random.default_rng(0)
    p = {"w": rng.normal(size=(3, 2)).astype(np.float32), "b": np.ones(2, np.float32)}
    x = rng.normal(size=(5, 3)).astype(np.float32)
    out = compiled(p, x, scale=2.0)
    np.testing.assert_allclose(out["y"], np.tanh(x @ p["w"] + p["b"]) * 2.0, rtol=1e-6)
    assert out["y"].dtype == np.float32


def test_compiled_refuses_other_signatures_with_jaxs_error():
    compiled = JITTED.lower(PARAMS, S((5, 3), np.float32)).compile()
    p = {"w": np.ones((3, 2), np.float32), "b": np.ones(2, np.float32)}
    with pytest.raises(TypeError, match=r"Argument types differ.*\n.*compiled with "
                                        r"float32\[5,3\] and called with float32\[4,3\]"):
        compiled(p, np.ones((4, 3), np.float32))
    with pytest.raises(TypeError, match="called with float64"):
        compiled(p, np.ones((5, 3)))
    with pytest.raises(TypeError, match="input pytree"):
        compiled({"w": p["w"]}, np.ones((5, 3), np.float32))


def test_eval_shape_and_lower_equal_what_a_call_gives():
    f = fungrad.jit(lambda a, b: (a * b, fnp.linalg.norm(a)))
    out = f.eval_shape(S((4,), np.float64), 3.0)
    assert out == (S((4,), np.float64), S((), np.float64))
    real = f(np.ones(4), 3.0)
    assert [(o.shape, o.dtype) for o in real] == [(o.shape, o.dtype) for o in out]
    # lowering with real arrays and with stand-ins gives the same program
    assert f.lower(np.ones(4), 3.0).source() == f.lower(S((4,), np.float64), 3.0).source()
