"""The recorded instruction streams of all blocks, as one Program.

Instructions are emitted core by core in program order (``seq`` = position in the
core's stream, so each (core, pipe) lane keeps its order), grouped into one vectorised
ProgramBuilder call per kind of instruction. The k-th SyncAll of every block is one
barrier group. A GM copy's range is its region (the unit of L2 residency): the same range
of the same array read or written again is the same region, so a re-read after a write
can hit in L2.
"""
from __future__ import annotations

from collections import defaultdict

import numpy as np

from kernels.common.program import Kind, Program, ProgramBuilder


def to_program(name: str, cores) -> tuple[Program, np.ndarray, np.ndarray]:
    """(Program, student line per instruction, block per instruction) of the launch."""
    flat = [(core, seq, instr) for core in cores for seq, instr in enumerate(core.instrs)]
    first = np.cumsum([0] + [len(core.instrs) for core in cores])
    b = ProgramBuilder(name, max_instructions=max(1, cores[0].launch.cap))
    region_ids = _regions(b, flat)
    groups: dict[tuple, list[int]] = defaultdict(list)
    for g, (_, _, instr) in enumerate(flat):
        groups[_group_key(instr)].append(g)
    ids = np.full(len(flat), -1, np.int64)
    for key, members in groups.items():
        ids[members] = _emit_group(b, key, [flat[g] for g in members], region_ids, members)
    after, before = [], []
    for block, core in enumerate(cores):
        for seq, instr in enumerate(core.instrs):
            for dep in instr.deps:
                after.append(first[block] + seq)
                before.append(first[block] + dep)
    if after:
        b.depend(ids[np.asarray(after)], ids[np.asarray(before)])
    lines = np.full(len(flat), -1, np.int32)
    blocks = np.zeros(len(flat), np.int32)
    lines[ids] = [instr.line if instr.line is not None else -1 for _, _, instr in flat]
    blocks[ids] = [core.block for core, _, _ in flat]
    return b.build(), lines, blocks


def _regions(b: ProgramBuilder, flat) -> dict[int, int]:
    """Region id of every GM copy (by position in ``flat``), one region per distinct range
    in order of first use."""
    keys: dict[tuple, int] = {}
    sizes: list[int] = []
    of: dict[int, int] = {}
    for g, (_, _, instr) in enumerate(flat):
        if instr.region is None:
            continue
        if instr.region not in keys:
            keys[instr.region] = len(sizes)
            sizes.append(instr.nbytes)
        of[g] = keys[instr.region]
    if sizes:
        ids = b.regions(sizes)
        of = {g: int(ids[r]) for g, r in of.items()}
    return of


def _group_key(instr) -> tuple:
    """Instructions emitted by one builder call share this key."""
    if instr.kind == Kind.TRANSFER:
        return (Kind.TRANSFER, instr.pipe, instr.label, instr.src, instr.dst)
    if instr.kind == Kind.VECTOR:
        return (Kind.VECTOR, instr.label, instr.dtype, instr.vclass)
    if instr.kind == Kind.MMAD:
        return (Kind.MMAD, instr.label, instr.dtype)
    return (instr.kind, instr.barrier)


def _emit_group(b: ProgramBuilder, key: tuple, members, region_ids, positions) -> np.ndarray:
    """One builder call for instructions of one key; returns their ids in ``members`` order."""
    core = np.array([c.core_id for c, _, _ in members], np.int64)
    seq = np.array([s for _, s, _ in members], np.int64)
    instrs = [i for _, _, i in members]
    kind = key[0]
    if kind == Kind.TRANSFER:
        _, pipe, label, src, dst = key
        region = np.array([region_ids.get(g, -1) for g in positions], np.int64)
        return b.transfer(core, pipe, label, src, dst, [i.nbytes for i in instrs], seq,
                          region=region)
    if kind == Kind.VECTOR:
        _, label, dtype, vclass = key
        return b.vector(core, label, [i.elems for i in instrs], dtype, seq, vclass=vclass)
    if kind == Kind.MMAD:
        _, label, dtype = key
        return b.mmad(core, label, [i.m for i in instrs], [i.n for i in instrs],
                      [i.k for i in instrs], dtype, seq)
    if kind == Kind.BARRIER:
        order = np.argsort(core, kind="stable")  # sync_all numbers its cores ascending
        ids = np.empty(len(core), np.int64)
        ids[order] = b.sync_all(core[order], seq[order])
        return ids
    raise ValueError(f"no emitter for instructions of kind {kind!r}")
