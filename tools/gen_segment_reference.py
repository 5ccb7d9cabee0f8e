"""Record jax.ops segment reductions and their gradients from real JAX.

    /path/to/jax-venv/bin/python tools/gen_segment_reference.py

writes tests/data/segment_reference.json (JAX version, x64 on): values of
segment_sum/prod/max/min on fixed inputs (ties, empty segments, negative and
too-large ids, bucket_size, integer data) and the gradient of
sum(w * segment_op(data)) with respect to data (not for prod: JAX has
no gradient of scatter_mul with repeated indices).
"""
import json
import os

import jax

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "data", "segment_reference.json")

CASES = [
    # name, data, ids, num_segments, bucket_size
    ("ties", [[1.0, 2.0], [3.0, 2.0], [3.0, -1.0], [0.5, 4.0]], [0, 0, 0, 2], 4, None),
    ("out_of_range", [1.5, -2.0, 3.0, 4.0, 0.25], [-1, 1, 5, 1, 0], 3, None),
    ("unsorted", [0.5, -1.5, 2.5, 2.5, -0.5, 1.0], [2, 0, 2, 1, 0, 2], 3, None),
    ("buckets", [0.5, -1.5, 2.5, 2.5, -0.5, 1.0, 3.0], [2, 0, 2, 1, 0, 2, 2], 3, 2),
]
INT_CASE = ([3, -7, 2, 9, 0], [1, 1, 0, 3, 1], 5)


def main():
    records = []
    for name, data, ids, n, bucket in CASES:
        x = np.asarray(data, np.float64)
        w = np.linspace(0.5, 1.5, n * int(np.prod(x.shape[1:]))).reshape((n,) + x.shape[1:])
        for op in ("sum", "prod", "max", "min"):
            fn = getattr(jax.ops, f"segment_{op}")
            f = lambda x: fn(x, jnp.asarray(ids), num_segments=n, bucket_size=bucket)  # noqa: E731
            value = np.asarray(f(x))
            loss = lambda x: jnp.sum(jnp.where(jnp.isfinite(f(x)), w * f(x), 0.0))  # noqa
            # JAX has no gradient of scatter_mul with repeated indices
            grad = None if op == "prod" else np.asarray(jax.grad(loss)(x))
            records.append({"case": name, "op": op, "data": data, "ids": ids,
                            "num_segments": n, "bucket_size": bucket, "w": w.tolist(),
                            "value": [repr(float(v)) for v in value.ravel()],
                            "shape": list(value.shape),
                            "grad": None if grad is None else [repr(float(v)) for v in grad.ravel()]})
    data, ids, n = INT_CASE
    ints = {op: np.asarray(getattr(jax.ops, f"segment_{op}")(
        jnp.asarray(data, jnp.int32), jnp.asarray(ids), num_segments=n)).tolist()
        for op in ("sum", "prod", "max", "min")}
    with open(OUT, "w") as fh:
        json.dump({"made_by": "tools/gen_segment_reference.py", "jax": jax.__version__,
                   "float_cases": records,
                   "int_case": {"data": data, "ids": ids, "num_segments": n, **ints}},
                  fh, indent=1)


if __name__ == "__main__":
    main()
