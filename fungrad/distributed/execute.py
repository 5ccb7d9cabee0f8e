"""Running a shard_map body on Dask workers (the client's side).

Plan (once per body)::

    body jaxpr --optimize--> levels: a collective raises its result one level
    stage k   = the other equations of level k, compiled to NumPy source
    between stage k-1 and k: the collectives of level k

so a data-parallel step (``value_and_grad`` then ``pmean``) is two stages
and one all-reduce between them.  ``axis_index`` is a constant of each position.  The
last stage returns exactly the body's outputs.

Run (once per call): one task graph, sent to the scheduler in one message
and not waited for — per stage, one ``worker.run_stage`` task per mesh
position, restricted (loosely) to that position's worker, so blocks stay
where they are; per reduction, ``worker.combine`` tasks over the positions
along the axis (recursive doubling for 2, 4, 8 ... positions, so that every
position ends with the total; a binary tree otherwise); gathers,
ppermutes and all_to_alls move only the values they need (``worker.pack``).
The results are ShardedArrays of Dask futures: the next call uses them where
they are, ``np.asarray`` gathers them.  Only the last stage's tasks are kept
as futures; the scheduler frees the others once they are used.

Fault tolerance is Dask's: every block, input and program is the result of
a task whose spec holds its data (``worker.hold``), so a block whose worker
died is recomputed (re-sent from the scheduler's copy of the client's data,
or recomputed from its lineage), and tasks that ran there are rescheduled.
"""
from __future__ import annotations

import itertools
import uuid

import numpy as np

from fungrad.core import ClosedJaxpr, Jaxpr, Literal, ShapedArray
from fungrad.distributed import cluster, worker
from fungrad.distributed.cluster import RemoteRef
from fungrad.interpreters import codegen
from fungrad.interpreters.passes import optimize
from fungrad.sharding import NamedSharding, ShardedArray, global_shape

__all__ = ["Plan", "plan", "run", "put_blocks"]

# host blocks up to this size travel inside the tasks that use them; larger
# ones become one task of their own (sent once, then moved worker to worker)
_EMBED_BYTES = 1 << 16

_REDUCE_OPS = {"psum": "add", "psum_scatter": "add", "pmax": "max", "pmin": "min"}


# ----------------------------------------------------------------------------
# The plan
# ----------------------------------------------------------------------------

class Stage:
    """Equations between collectives, run at every position as one compiled function."""
    __slots__ = ("index", "eqns", "in_vars", "out_vars")

    def __init__(self, index, eqns):
        self.index, self.eqns, self.in_vars, self.out_vars = index, eqns, [], []


class Collective:
    """Collectives of one level run together: ``kind`` is reduce (psum, pmax,
    pmin, psum_scatter), gather (all_gather), ppermute or all_to_all."""
    __slots__ = ("kind", "axis", "eqns")

    def __init__(self, kind, axis, eqns):
        self.kind, self.axis, self.eqns = kind, axis, eqns


def _kind(eqn) -> tuple:
    name, axis = eqn.primitive.name, eqn.params["axis_name"]
    if name in _REDUCE_OPS:
        return ("reduce", axis)
    if name == "all_gather":
        return ("gather", axis)
    return (name, axis, id(eqn))        # ppermute, all_to_all: one at a time


class Plan:
    """The stages and collectives of one body on one mesh, and its program."""

    def __init__(self, body: ClosedJaxpr, mesh):
        self.mesh = mesh
        flat = optimize(body)           # nested jits are inlined: one flat program
        jaxpr = flat.jaxpr
        self.invars, self.outvars = list(jaxpr.invars), list(jaxpr.outvars)
        self.index_vars = []            # (var, axis name): axis_index, a per-position constant
        stages, colls = self._levels(jaxpr)
        self.steps = []
        for k in range(len(stages)):
            for key, eqns in colls.get(k, {}).items():
                self.steps.append(Collective(key[0], key[1], eqns))
            self.steps.append(stages[k])
        self._wire(stages, colls, jaxpr)
        self.program = worker.Program([self._code(s, jaxpr, flat.consts) for s in stages])
        self._future = (None, None)     # (client generation, future of the program)

    def _levels(self, jaxpr):
        """Collectives as early as they can run (each one level above its inputs);
        the other equations as late as their uses allow, so a stage computes
        only what the next collectives and stages need from it."""
        level = {}
        lv = lambda a: 0 if isinstance(a, Literal) else level.get(a, 0)
        colls = {}
        for eqn in jaxpr.eqns:
            prim = eqn.primitive
            if prim.name == "axis_index":
                self.index_vars.append((eqn.outvars[0], eqn.params["axis_name"]))
                continue
            k = max([lv(a) for a in eqn.inputs], default=0) + (prim.collective is not None)
            if prim.collective is not None:
                colls.setdefault(k, {}).setdefault(_kind(eqn), []).append(eqn)
            level.update((o, k) for o in eqn.outvars)
        last = max(list(level.values()) + [0])
        need = {v: last for v in self.outvars if not isinstance(v, Literal)}
        stage_eqns = {}
        for eqn in reversed(jaxpr.eqns):
            prim = eqn.primitive
            if prim.name == "axis_index":
                continue
            if prim.collective is not None:
                k = level[eqn.outvars[0]] - 1
            else:
                k = min([need.get(o, last) for o in eqn.outvars], default=last)
                stage_eqns.setdefault(k, []).insert(0, eqn)
            for a in eqn.inputs:
                if not isinstance(a, Literal):
                    need[a] = min(need.get(a, last), k)
        return [Stage(k, stage_eqns.get(k, [])) for k in range(last + 1)], colls

    def _wire(self, stages, colls, jaxpr):
        """Each stage's inputs (defined elsewhere) and outputs (used elsewhere); the
        last stage's outputs are the body's."""
        consts = set(jaxpr.constvars)
        used_elsewhere = set(v for v in self.outvars if not isinstance(v, Literal))
        for s in stages:
            own = {o for eqn in s.eqns for o in eqn.outvars}
            uses = [a for eqn in s.eqns for a in eqn.inputs]
            if s is stages[-1]:
                uses += self.outvars
            s.in_vars = _unique(a for a in uses if not isinstance(a, Literal)
                                and a not in own and a not in consts)
            used_elsewhere.update(s.in_vars)
        for by_kind in colls.values():
            used_elsewhere.update(a for eqns in by_kind.values() for eqn in eqns
                                  for a in eqn.inputs if not isinstance(a, Literal))
        coll_inputs = {k: [e.inputs[0] for eqns in by_kind.values() for e in eqns if e.inputs]
                       for k, by_kind in colls.items()}
        for s in stages[:-1]:
            mine = [o for eqn in s.eqns for o in eqn.outvars if o in used_elsewhere]
            # the next collectives' inputs first: then a stage's result can be
            # exactly what a reduction needs (no extra task to pick them out)
            first = _unique(v for v in coll_inputs.get(s.index + 1, []) if v in set(mine))
            s.out_vars = first + [v for v in mine if v not in set(first)]
        stages[-1].out_vars = list(self.outvars)

    def _code(self, stage, jaxpr, consts) -> worker.StageCode:
        const_of = dict(zip(jaxpr.constvars, consts))
        used = _unique(a for eqn in stage.eqns for a in eqn.inputs if a in const_of)
        used += [v for v in stage.out_vars if v in const_of and v not in used]
        sub = Jaxpr(used, stage.in_vars, stage.eqns, stage.out_vars)
        opt = optimize(ClosedJaxpr(sub, [const_of[v] for v in used]))
        source, block_consts, modules = codegen.lower_jaxpr_and_consts(opt.jaxpr, "stage")
        # kernel modules travel by import name (workers import them; modules don't pickle)
        return worker.StageCode(source, block_consts, opt.consts,
                                {alias: m.__name__ for alias, m in modules.items()})

    def program_future(self, client):
        gen, fut = self._future
        if gen != cluster.generation() or fut is None:
            fut = client.submit(worker.hold, self.program, pure=False,
                                key=f"fungrad-program-{self.program.digest[:20]}")
            self._future = (cluster.generation(), fut)
        return fut

    def sources(self) -> list[str]:
        """The NumPy source of each stage (what the workers compile)."""
        return [s.source for s in self.program.stages]


def _unique(items) -> list:
    seen, out = set(), []
    for x in items:
        if x not in seen:
            seen.add(x)
            out.append(x)
    return out


def plan(body: ClosedJaxpr, mesh) -> Plan:
    """The plan of ``body`` on ``mesh`` (cached on the body: it dies with it)."""
    return body.derived(("distributed_plan", mesh), lambda: Plan(body, mesh))


# ----------------------------------------------------------------------------
# Running one call
# ----------------------------------------------------------------------------

def _task(tasks: dict, placement: dict, key: str, address: str, fn, *args):
    """Add ``fn(*args)`` under ``key``, to run on the worker at ``address`` if it
    is there (elsewhere if not); returns a reference to its result."""
    from dask._task_spec import Task, TaskRef, parse_input
    tasks[key] = Task(key, fn, *[parse_input(a) for a in args])
    placement[key] = [address]
    return TaskRef(key)


def _send(client, tasks: dict, placement: dict, keys: list) -> dict:
    """Send a task graph in one message (no waiting); futures of ``keys``."""
    import dask
    # per-task placement: the scheduler calls this with each key (a dict's bound
    # method: the scheduler needs nothing of fungrad to use it)
    with dask.annotate(workers=placement.get, allow_other_workers=True):
        futures = client.get(tasks, keys, sync=False)
    return dict(zip(keys, futures))


class _Call:
    """The state of one call: where every value of the body is, per position, and
    the task graph being built (keys -> tasks, keys -> the worker to run on)."""

    def __init__(self, plan_: Plan, client):
        self.plan, self.client = plan_, client
        mesh = plan_.mesh
        self.n = mesh.size
        self.addresses = [d.address for d in mesh.devices.flat]
        self.coords = mesh.positions()
        self.env: dict = {}
        self.lengths: dict = {}         # task key -> number of values in its tuple
        self.tasks: dict = {}
        self.placement: dict = {}
        self.tag = uuid.uuid4().hex[:12]
        self.counter = itertools.count()

    def read(self, atom, p):
        return atom.val if isinstance(atom, Literal) else self.env[atom][p]

    def set(self, var, p, ref):
        self.env.setdefault(var, [None] * self.n)[p] = ref

    def submit(self, fn, *args, p, name, n_out=None):
        """Add the task ``fn(*args)`` to run at position ``p``; returns a reference
        to its result (a Dask TaskRef until ``send``)."""
        key = f"fungrad-{name}-{self.tag}-{next(self.counter)}"
        ref = _task(self.tasks, self.placement, key, self.addresses[p], fn, *args)
        if n_out is not None:
            self.lengths[key] = n_out
        return ref

    def send(self, wanted: list) -> dict:
        """Send the graph (one message); futures of the ``wanted`` references."""
        return _send(self.client, self.tasks, self.placement, [r.key for r in wanted])

    # --- stages -------------------------------------------------------------------
    def stage(self, s: Stage, program):
        futures = []
        for p in range(self.n):
            args = [_encode(self.read(v, p)) for v in s.in_vars]
            fut = self.submit(worker.run_stage, program, s.index, *args, p=p,
                              name=f"stage{s.index}", n_out=len(s.out_vars))
            futures.append(fut)
            for i, v in enumerate(s.out_vars):
                if not isinstance(v, Literal):
                    self.set(v, p, RemoteRef(fut, i))
        return futures

    # --- collectives ----------------------------------------------------------------
    def payload(self, atoms, p):
        """The values ``atoms`` at position ``p`` as one tuple (a future or data)."""
        refs = [self.read(a, p) for a in atoms]
        if not any(isinstance(r, RemoteRef) for r in refs):
            return tuple(refs)
        fut = refs[0].future if isinstance(refs[0], RemoteRef) else None
        if fut is not None and self.lengths.get(fut.key, -1) == len(refs) and all(
                isinstance(r, RemoteRef) and r.future is fut and r.index == i
                for i, r in enumerate(refs)):
            return fut                  # already exactly these values
        return self.submit(worker.pack, *map(_encode, refs), p=p, name="pack", n_out=len(refs))

    def groups(self, axis):
        """Positions along ``axis`` (in lane order) for each setting of the others."""
        mesh = self.plan.mesh
        a = mesh.axis_names.index(axis)
        shape = mesh.devices.shape
        others = [range(s) if i != a else [None] for i, s in enumerate(shape)]
        out = []
        for fixed in itertools.product(*others):
            idx = [list(fixed) for _ in range(shape[a])]
            for lane in range(shape[a]):
                idx[lane][a] = lane
            out.append([int(np.ravel_multi_index(tuple(i), shape)) for i in idx])
        return out

    def collective(self, c: Collective):
        getattr(self, c.kind)(c)

    def reduce(self, c: Collective):
        ops = tuple(_REDUCE_OPS[e.primitive.name] for e in c.eqns)
        posts = tuple((e.params["scatter_dimension"], e.params["tiled"])
                      if e.primitive.name == "psum_scatter" else None for e in c.eqns)
        ins = [e.inputs[0] for e in c.eqns]
        for group in self.groups(c.axis):
            payloads = [self.payload(ins, p) for p in group]
            totals = self.all_reduce(ops, payloads, group)
            for lane, p in enumerate(group):
                res = totals[lane]
                if any(posts):
                    res = self.submit(worker.scatter_chunks, res, lane, len(group), posts,
                                      p=p, name="scatter", n_out=len(ops))
                for i, e in enumerate(c.eqns):
                    self.set(e.outvars[0], p, _element(res, i))

    def all_reduce(self, ops, values, group) -> list:
        """Every lane's reduction of ``values``.  With 2, 4, 8, ... lanes: recursive
        doubling (log2 n rounds; in round r lane i combines with lane i xor 2**r,
        so every lane ends with the total, with no broadcast after); otherwise a
        binary tree to lane 0, whose result every lane then fetches.  Operands are
        combined in lane order, so every lane's total is bitwise the same."""
        n = len(group)
        if n & (n - 1) == 0:
            step = 1
            while step < n:
                values = [self.submit(worker.combine, ops, *(
                    (values[i], values[i ^ step]) if i < i ^ step else (values[i ^ step], values[i])),
                    p=group[i], name="combine", n_out=len(ops)) for i in range(n)]
                step *= 2
            return values
        nodes = list(zip(values, group))
        while len(nodes) > 1:
            nxt = [(self.submit(worker.combine, ops, a, b, p=pa, name="combine", n_out=len(ops)),
                    pa) for (a, pa), (b, _) in zip(nodes[0::2], nodes[1::2])]
            nodes = nxt + ([nodes[-1]] if len(nodes) % 2 else [])
        return [nodes[0][0]] * n

    def gather(self, c: Collective):
        specs = tuple((e.params["axis"], e.params["tiled"]) for e in c.eqns)
        ins = [e.inputs[0] for e in c.eqns]
        for group in self.groups(c.axis):
            members = [self.payload(ins, p) for p in group]
            fut = self.submit(worker.gather, specs, *members, p=group[0], name="gather",
                              n_out=len(specs))
            for p in group:
                for i, e in enumerate(c.eqns):
                    self.set(e.outvars[0], p, RemoteRef(fut, i))

    def ppermute(self, c: Collective):
        (e,) = c.eqns
        aval = e.outvars[0].aval
        zeros = np.zeros(aval.shape, aval.dtype)
        source_of = {dst: src for src, dst in e.params["perm"]}
        for group in self.groups(c.axis):
            for lane, p in enumerate(group):
                src = source_of.get(lane)
                self.set(e.outvars[0], p, zeros if src is None else
                         _element(self.payload(e.inputs, group[src]), 0))

    def all_to_all(self, c: Collective):
        (e,) = c.eqns
        for group in self.groups(c.axis):
            members = [self.payload(e.inputs, p) for p in group]
            for lane, p in enumerate(group):
                fut = self.submit(worker.all_to_all_chunk, lane, len(group),
                                  e.params["split_axis"], e.params["concat_axis"], *members,
                                  p=p, name="all_to_all", n_out=1)
                self.set(e.outvars[0], p, RemoteRef(fut, 0))


def _encode(ref):
    return (ref.future, ref.index) if isinstance(ref, RemoteRef) else (ref, None)


def _element(obj, i):
    return obj[i] if isinstance(obj, tuple) else RemoteRef(obj, i)


def run(body: ClosedJaxpr, mesh, in_specs, out_specs, args) -> list:
    """One call of a shard_map body on the workers; returns ShardedArrays."""
    p_ = plan(body, mesh)
    client = cluster.client()
    call = _Call(p_, client)
    for v, x, spec in zip(p_.invars, args, in_specs):
        for p, ref in enumerate(_input_refs(x, spec, mesh, call)):
            call.set(v, p, ref)
    for v, name in p_.index_vars:
        for p in range(call.n):
            call.set(v, p, np.int64(call.coords[p][name]))
    program = p_.program_future(client)
    last = None
    for step in p_.steps:
        if isinstance(step, Stage):
            last = call.stage(step, program)
        else:
            call.collective(step)
    futures = call.send(last)
    last = [futures[r.key] for r in last]
    outs = []
    for i, (v, spec) in enumerate(zip(p_.outvars, out_specs)):
        aval = ShapedArray(global_shape(v.aval.shape, spec, mesh), v.aval.dtype)
        outs.append(ShardedArray(aval, NamedSharding(mesh, spec),
                                 [RemoteRef(f, i) for f in last]))
    return outs


def _input_refs(x, spec, mesh, call: _Call) -> list:
    sharding = NamedSharding(mesh, spec)
    if isinstance(x, ShardedArray) and x.sharding == sharding:
        return list(x._refs)
    value = np.asarray(x)
    refs, by_index = [], {}
    for p, idx in enumerate(sharding.position_indices(value.shape)):
        key = tuple((s.start, s.stop) for s in idx)
        if key not in by_index:
            block = np.array(value[idx])
            by_index[key] = block if block.nbytes <= _EMBED_BYTES else RemoteRef(
                call.submit(worker.hold, block, p=p, name="input"))
        refs.append(by_index[key])
    return refs


def put_blocks(blocks, devices) -> list:
    """Each block as a task on its device's worker (``device_put``): the data is
    in the task, so a block whose worker dies is sent again."""
    tag = uuid.uuid4().hex[:12]
    tasks, placement, keys = {}, {}, []
    for i, (b, d) in enumerate(zip(blocks, devices)):
        keys.append(f"fungrad-block-{tag}-{i}")
        _task(tasks, placement, keys[-1], d.address, worker.hold, b)
    futures = _send(cluster.client(), tasks, placement, keys)
    return [RemoteRef(futures[k]) for k in keys]
