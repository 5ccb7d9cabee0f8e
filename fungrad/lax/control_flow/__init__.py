"""Control flow as primitives carrying sub-jaxprs, one construct per module.

========================  ====================================================
``cond.py``               ``cond``, ``switch`` (``cond_p``)
``scan.py``               ``scan``, ``fori_loop``, ``map`` (``scan_p``)
``while_loop.py``         ``while_loop`` (``while_p``), reverse mode by counting
``while_tape.py``         reverse mode of a while loop inside jit (``while_lin_p``)
``associative_scan.py``   ``associative_scan`` (no primitive: slices and ``fn``)
``solves.py``             ``custom_linear_solve``, ``custom_root``
``call.py``               ``jit_p``, a call of a compiled jaxpr; ``closed_call_p``, ``call_p``
``common.py``             operand groups, multi-jaxpr caching, loop-body JVPs
========================  ====================================================

Every construct's rules ask the interpreters for derived jaxprs
(``ad.jvp_jaxpr``, ``ad.transpose_jaxpr``, ``batching.batch_jaxpr``,
``partial_eval.partial_eval_jaxpr``), cached on the jaxprs they come from.
"""
from fungrad.lax.control_flow.call import jit_p, closed_call_p, call_p  # noqa: F401
from fungrad.lax.control_flow.cond import *  # noqa: F401,F403
from fungrad.lax.control_flow.scan import *  # noqa: F401,F403
from fungrad.lax.control_flow.while_tape import while_lin_p, while_lin_t_p  # noqa: F401
from fungrad.lax.control_flow.while_loop import *  # noqa: F401,F403
from fungrad.lax.control_flow.associative_scan import *  # noqa: F401,F403
from fungrad.lax.control_flow.solves import *  # noqa: F401,F403

__all__ = ["cond", "switch", "scan", "fori_loop", "while_loop", "map", "associative_scan",
           "custom_linear_solve", "custom_root", "cond_p", "scan_p", "while_p",
           "while_lin_p", "while_lin_t_p", "jit_p", "closed_call_p", "call_p"]
