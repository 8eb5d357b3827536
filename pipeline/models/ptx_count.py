"""Float64 instructions a fused kernel executes, counted on its compiled PTX.

A kernel's PTX (numba with libNVVM, as `cuda_check` compiles it) holds loops that
the compiler unrolled in part, and branches (libdevice's exp and log1p take a slow
path for some arguments), so the PTX's static counts are not what a thread runs.
`execute` runs one thread of the PTX on the CPU, instruction by instruction, on
real arguments, and counts every float64 arithmetic instruction it executes; no
GPU needed. `per_example` differences two runs (N examples against none, one epoch)
so the count per example and epoch is what the compiled code executes for that
data, and the per-epoch work outside the examples loop (the chain to the
parameters, the update) comes apart.

Counted: add, sub, mul, fma, mad, div, rcp, sqrt, min and max on .f64 (an fma or
mad is 2 flops, the rest 1; moves, compares, selects, negations and absolute values
are not arithmetic: on the GPU they are operand modifiers or other units). A PTX
div.rn.f64 or rcp.rn.f64 is a sequence of several DFMA in SASS; it counts as one
instruction (one flop) here, so the share of the FP64 peak is a lower bound where
a kernel divides (`Counts.divisions` says how many).

The interpreter knows the PTX these kernels compile to (tests/models/test_ptx_count.py);
an instruction it does not know raises ValueError, naming it.
"""

from __future__ import annotations

import math
import re
import struct
from dataclasses import dataclass, field

FLOPS = {"add": 1, "sub": 1, "mul": 1, "fma": 2, "mad": 2, "div": 1, "rcp": 1, "sqrt": 1}
FLOPS |= {"min": 1, "max": 1}
LOCAL_BASE, GLOBAL_STRIDE = 1 << 40, 1 << 36


@dataclass
class Counts:
    """Executed float64 instructions by opcode (add, fma, ...), and their flops."""

    ops: dict[str, int] = field(default_factory=dict)

    @property
    def instructions(self) -> int:
        return sum(self.ops.values())

    @property
    def flops(self) -> int:
        return sum(FLOPS[op] * n for op, n in self.ops.items())

    @property
    def divisions(self) -> int:
        return self.ops.get("div", 0) + self.ops.get("rcp", 0) + self.ops.get("sqrt", 0)

    def minus(self, other: Counts) -> Counts:
        keys = set(self.ops) | set(other.ops)
        return Counts({k: self.ops.get(k, 0) - other.ops.get(k, 0) for k in sorted(keys)})


OPERAND = re.compile(r"\{[^}]*\}|\[[^\]]*\]|[^,\s]+")
INSTRUCTION = re.compile(r"^(@!?%\w+\s+)?([\w.]+)\s*(.*?);$")


def parse(ptx: str) -> tuple[list[tuple], dict[str, int]]:
    """The first kernel entry's instructions (guard, opcode, operands) and labels."""
    body = ptx[ptx.index(".entry") :]
    body = body[body.index("{", body.index(")")) + 1 :]
    program: list[tuple] = []
    labels: dict[str, int] = {}
    for raw in body.splitlines():
        line = raw.split("//")[0].strip()
        if not line or line[0] in ".{}":
            continue
        if line.endswith(":"):
            labels[line[:-1]] = len(program)
            continue
        found = INSTRUCTION.match(line)
        if found is None:
            raise ValueError(f"unknown PTX line: {line}")
        guard, op, rest = found.groups()
        guard = guard.strip() if guard else None
        program.append((guard, op, OPERAND.findall(rest)))
    return program, labels


def _bits(kind: str) -> int:
    return int(re.sub(r"\D", "", kind) or 64) if kind != "pred" else 1


def _wrap(value: int, kind: str) -> int:
    bits = _bits(kind)
    value &= (1 << bits) - 1
    if kind[0] == "s" and value >> (bits - 1):
        value -= 1 << bits
    return value


def _f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0] if math.isfinite(x) else x


def _to_bits(value, register: str) -> int:
    if register.startswith("%fd"):
        return struct.unpack("<Q", struct.pack("<d", value))[0]
    if register.startswith("%f"):
        return struct.unpack("<I", struct.pack("<f", value))[0]
    return value


def _from_bits(bits: int, register: str):
    if register.startswith("%fd"):
        return struct.unpack("<d", struct.pack("<Q", bits & (2**64 - 1)))[0]
    if register.startswith("%f"):
        return struct.unpack("<f", struct.pack("<I", bits & (2**32 - 1)))[0]
    return bits


def _compare(cmp: str, a, b) -> bool:
    if isinstance(a, float) or isinstance(b, float):
        if math.isnan(a) or math.isnan(b):
            return cmp.endswith("u") or cmp in ("ne", "nan")
        cmp = cmp.rstrip("u") if cmp not in ("num", "nan") else cmp
    table = {"eq": a == b, "ne": a != b, "lt": a < b, "le": a <= b, "gt": a > b, "ge": a >= b}
    table |= {"lo": a < b, "ls": a <= b, "hi": a > b, "hs": a >= b, "num": True, "nan": False}
    return table[cmp]


def _div(a: float, b: float) -> float:
    try:
        return a / b
    except ZeroDivisionError:
        return (
            math.nan
            if a == 0 or math.isnan(a)
            else math.copysign(math.inf, a) * (math.copysign(1.0, b))
        )


class Thread:
    """One CUDA thread running a kernel's PTX on the CPU: registers, the kernel's
    parameters, its arrays (numpy, at made-up addresses) and its local memory."""

    def __init__(self, ptx: str, params: list, arrays: list):
        self.program, self.labels = parse(ptx)
        self.params, self.arrays = params, arrays  # arrays: (address, numpy array)
        self.reg: dict[str, object] = {"%tid.x": 0, "%ntid.x": 1, "%ctaid.x": 0}
        self.memory: dict[int, object] = {}
        self.counts = Counts()

    def value(self, operand: str, kind: str):
        if operand.startswith("%"):
            return self.reg[operand]
        if operand.startswith("0d"):
            return struct.unpack(">d", bytes.fromhex(operand[2:]))[0]
        if operand.startswith("0f"):
            return struct.unpack(">f", bytes.fromhex(operand[2:]))[0]
        if operand.startswith("__local_depot"):
            return LOCAL_BASE
        number = int(operand, 0)
        return float(number) if kind.startswith("f") else number

    def address(self, operand: str) -> int | str:
        inner = operand.strip("[]")
        name, _, offset = inner.partition("+")
        if not name.startswith("%") and not name.startswith("__local_depot"):
            return name  # a parameter or a global symbol
        return self.value(name, "u64") + (int(offset, 0) if offset else 0)

    def load(self, where, kind: str):
        if isinstance(where, str):
            index = re.search(r"_param_(\d+)$", where)
            if index is None:
                return self.memory.get(where, 0)
            return self.params[int(index[1])]
        for base, array in self.arrays:
            if base <= where < base + array.nbytes:
                return array.reshape(-1)[(where - base) // array.itemsize].item()
        return self.memory[where]

    def store(self, where, value) -> None:
        for base, array in self.arrays:
            if isinstance(where, int) and base <= where < base + array.nbytes:
                array.reshape(-1)[(where - base) // array.itemsize] = value
                return
        self.memory[where] = value

    def run(self, limit: int = 10**8) -> Counts:
        pc, steps = 0, 0
        while pc < len(self.program):
            steps += 1
            if steps > limit:
                raise RuntimeError("the PTX ran past its instruction limit")
            guard, op, args = self.program[pc]
            pc += 1
            if guard is not None:
                taken = bool(self.reg[guard.lstrip("@!")])
                if taken == guard.startswith("@!"):
                    continue
            parts = op.split(".")
            base = parts[0]
            if base == "bra":
                pc = self.labels[args[0]]
                continue
            if base == "ret" or base == "exit":
                break
            self.step(base, parts, args)
        return self.counts

    def step(self, base: str, parts: list[str], args: list[str]) -> None:
        kind = parts[-1]
        if kind == "f64" and base in FLOPS:
            self.counts.ops[base] = self.counts.ops.get(base, 0) + 1
        reg, value = self.reg, self.value
        if base == "mov":
            dst, src = args
            if dst.startswith("{"):  # unpack a 64-bit value into two 32-bit halves
                bits = _to_bits(value(src, kind), src)
                lo, hi = (s.strip() for s in dst.strip("{}").split(","))
                for name, half in ((lo, bits & 0xFFFFFFFF), (hi, bits >> 32)):
                    if name != "_":
                        reg[name] = _from_bits(half, name)
            elif src.startswith("{"):
                lo, hi = (_to_bits(value(s.strip(), "b32"), s) for s in src.strip("{}").split(","))
                reg[dst] = _from_bits((hi << 32) | (lo & 0xFFFFFFFF), dst)
            else:
                got = value(src, kind)
                if src.startswith("%") and (src[:3] == "%fd" or src[:2] == "%f") != (
                    dst[:3] == "%fd" or dst[:2] == "%f"
                ):
                    got = _from_bits(_to_bits(got, src), dst)
                reg[dst] = got
        elif base in ("ld", "st"):
            space = parts[1]
            vector = parts[2] if parts[2].startswith("v") else None
            width = _bits(kind) // 8
            if base == "ld":
                dst, src = args
                where = self.address(src)
                if space == "param" or vector is None:
                    reg[dst] = self.load(where, kind)
                else:
                    names = [s.strip() for s in dst.strip("{}").split(",")]
                    for i, name in enumerate(names):
                        reg[name] = self.load(where + i * width, kind)
            else:
                dst, src = args
                where = self.address(dst)
                names = [s.strip() for s in src.strip("{}").split(",")] if vector else [src]
                for i, name in enumerate(names):
                    self.store(
                        where + i * width if isinstance(where, int) else where, value(name, kind)
                    )
        elif base == "cvta":
            reg[args[0]] = value(args[1], "u64")
        elif base == "setp":
            cmp = parts[1]
            a, b = value(args[1], kind), value(args[2], kind)
            if kind[0] in "su" or kind[0] == "b":
                if kind[0] == "u" or cmp in ("lo", "ls", "hi", "hs"):
                    a, b = _wrap(a, "u" + kind[1:]), _wrap(b, "u" + kind[1:])
                else:
                    a, b = _wrap(a, "s" + kind[1:]), _wrap(b, "s" + kind[1:])
            result = _compare(cmp, a, b)
            if len(parts) > 3:  # setp.cmp.bool.type p, a, b, c
                raise ValueError(f"unsupported PTX: {'.'.join(parts)}")
            reg[args[0]] = result
        elif base == "selp":
            reg[args[0]] = value(args[1], kind) if reg[args[3]] else value(args[2], kind)
        elif kind == "pred":
            a = [bool(value(x, kind)) for x in args[1:]]
            reg[args[0]] = {
                "and": lambda: a[0] and a[1],
                "or": lambda: a[0] or a[1],
                "xor": lambda: a[0] != a[1],
                "not": lambda: not a[0],
            }[base]()
        elif base == "cvt":
            to, frm = parts[-2], parts[-1]
            got = value(args[1], frm)
            if to[0] == "f":
                reg[args[0]] = _f32(float(got)) if to == "f32" else float(got)
            elif frm[0] == "f":
                reg[args[0]] = _wrap(int(math.trunc(got)), to)
            else:
                reg[args[0]] = _wrap(_wrap(got, frm), to)
        elif kind[0] == "f":
            a = [value(x, kind) for x in args[1:]]
            result = {
                "add": lambda: a[0] + a[1],
                "sub": lambda: a[0] - a[1],
                "mul": lambda: a[0] * a[1],
                "fma": lambda: a[0] * a[1] + a[2],
                "mad": lambda: a[0] * a[1] + a[2],
                "div": lambda: _div(a[0], a[1]),
                "rcp": lambda: _div(1.0, a[0]),
                "sqrt": lambda: math.sqrt(a[0]),
                "neg": lambda: -a[0],
                "abs": lambda: abs(a[0]),
                "min": lambda: min(a[0], a[1]),
                "max": lambda: max(a[0], a[1]),
            }
            if base not in result:
                raise ValueError(f"unsupported PTX: {'.'.join(parts)}")
            try:
                got = result[base]()
            except (OverflowError, ValueError):
                got = math.nan
            reg[args[0]] = _f32(got) if kind == "f32" else got
        else:  # integers and bits
            signed = "s" + kind[1:] if kind[0] != "u" else kind
            a = [_wrap(value(x, kind), signed) for x in args[1:]]
            if base == "mul" and parts[1] == "wide":
                reg[args[0]] = _wrap(a[0] * a[1], signed[0] + str(2 * _bits(kind)))
                return
            bits = _bits(kind)
            result = {
                "add": lambda: a[0] + a[1],
                "sub": lambda: a[0] - a[1],
                "mul": lambda: a[0] * a[1],
                "neg": lambda: -a[0],
                "not": lambda: ~a[0],
                "and": lambda: a[0] & a[1],
                "or": lambda: a[0] | a[1],
                "xor": lambda: a[0] ^ a[1],
                "min": lambda: min(a[0], a[1]),
                "max": lambda: max(a[0], a[1]),
                "abs": lambda: abs(a[0]),
                "shl": lambda: a[0] << min(a[1] & 0xFFFFFFFF, bits),
                "shr": lambda: (
                    (_wrap(a[0], "u" + kind[1:]) if kind[0] in "ub" else a[0])
                    >> min(a[1] & 0xFFFFFFFF, bits)
                ),
            }
            if base not in result:
                raise ValueError(f"unsupported PTX: {'.'.join(parts)}")
            reg[args[0]] = _wrap(result[base](), kind if kind[0] != "b" else "u" + kind[1:])


def flatten(arguments: tuple) -> tuple[list, list]:
    """A launch's arguments as numba passes them to the PTX (each array as meminfo,
    parent, nitems, itemsize, data, shape, strides), and the arrays at their
    made-up addresses."""
    params: list = []
    arrays: list = []
    for argument in arguments:
        if hasattr(argument, "shape"):
            address = GLOBAL_STRIDE * (len(arrays) + 1)
            arrays.append((address, argument))
            params += [0, 0, argument.size, argument.itemsize, address]
            params += list(argument.shape) + list(argument.strides)
        else:
            params.append(argument)
    return params, arrays


def execute(ptx: str, arguments: tuple) -> Counts:
    """Runs thread 0 of the kernel in `ptx` on `arguments` (numpy arrays and scalars,
    as a launch takes them); the float64 instructions it executed."""
    params, arrays = flatten(arguments)
    return Thread(ptx, params, arrays).run()
