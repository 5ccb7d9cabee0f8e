"""A numpyro NUTS fit of the eight schools written for JAX (issue 21 item 5),
timed on whichever ``jax`` runs it::

    python -m fungrad run benchmarks/numpyro_nuts.py 200     # fungrad, through the hook
    /path/to/jax-venv/bin/python benchmarks/numpyro_nuts.py  # real JAX (float64, 1 thread)
    python -m fungrad run benchmarks/numpyro_nuts.py 100 2   # two chains, vectorized

``python -m benchmarks.ecosystem`` runs both.  The model is numpyro's eight
schools example (centered); ``MCMC(NUTS(model))`` with one chain, no progress
bar (numpyro then compiles the whole chain as one loop).  Every
``mcmc.run`` traces and compiles its chain again (in JAX as here), so the
time per iteration is measured as a difference: a run of 2n iterations minus
a run of n, over n (warmup and sampling halves alike), in CPU seconds of this
process (one thread), so that other load on the machine does not count.  The two frameworks'
random streams differ, so their chains differ; what must agree is the model's
log density at fixed points, printed as ``losses``.  ``first_seconds`` is the
wall time of the first run of n iterations (tracing and compiling included).
"""
from __future__ import annotations

import json
import os
import sys
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

import numpy as np  # noqa: E402
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import numpyro  # noqa: E402
import numpyro.distributions as dist  # noqa: E402
from numpyro.infer import MCMC, NUTS  # noqa: E402
from numpyro.infer.util import log_density  # noqa: E402

Y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools(J, sigma, y=None):
    mu = numpyro.sample("mu", dist.Normal(0, 5))
    tau = numpyro.sample("tau", dist.HalfCauchy(5))
    with numpyro.plate("J", J):
        theta = numpyro.sample("theta", dist.Normal(mu, tau))
        numpyro.sample("obs", dist.Normal(theta, sigma), obs=y)


def fixed_point_log_densities() -> list[float]:
    rng = np.random.default_rng(0)
    points = [{"mu": rng.normal() * 3, "tau": rng.uniform(0.5, 6), "theta": rng.normal(size=8) * 5}
              for _ in range(5)]
    return [float(log_density(eight_schools, (8, SIGMA), {"y": Y}, p)[0]) for p in points]


def cpu_seconds_of_run(iterations: int, seed: int, chains: int = 1) -> float:
    mcmc = MCMC(NUTS(eight_schools), num_warmup=iterations // 2,
                num_samples=iterations - iterations // 2, progress_bar=False,
                **({"num_chains": chains, "chain_method": "vectorized"} if chains > 1 else {}))
    start = time.process_time()
    mcmc.run(jax.random.PRNGKey(seed), 8, SIGMA, y=Y)
    jax.block_until_ready(mcmc.get_samples())
    return time.process_time() - start


def main(argv=None):
    args = argv or sys.argv[1:] or ["100"]
    n, chains = int(args[0]), int(args[1]) if len(args) > 1 else 1
    start = time.perf_counter()
    cpu_seconds_of_run(n, 0, chains)                        # imports, first compiles
    first = time.perf_counter() - start
    seconds = (cpu_seconds_of_run(2 * n, 1, chains) - cpu_seconds_of_run(n, 1, chains)) / n
    print(json.dumps({"jax": jax.__version__, "step_seconds": seconds,
                      "first_seconds": first, "losses": fixed_point_log_densities()}))


if __name__ == "__main__":
    main()
