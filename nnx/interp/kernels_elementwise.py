"""Elementwise kernels: arithmetic, math functions, activations, comparisons, logic,
variadic Min/Max/Sum/Mean, Where, Cast."""

from __future__ import annotations

import numpy as np

from nnx.interp.kernels import KernelError, kernel, opt
from nnx.types import NP_TO_ONNX, ONNX_TO_NP, is_narrow, is_narrow_float

_ERR = dict(all="ignore")


def _f(x: np.ndarray, fn) -> np.ndarray:
    """Apply fn keeping x's dtype (float16 is computed in float32, rounded once)."""
    with np.errstate(**_ERR):
        r = fn(x.astype(np.float32) if x.dtype == np.float16 else x)
    r = np.asarray(r)
    if r.dtype != x.dtype:
        r = r.astype(x.dtype)
    return r


def _c(x: np.ndarray, v: float) -> np.generic:
    """v as a scalar of x's dtype (keeps float32 arithmetic in float32)."""
    return x.dtype.type(v)


# ---- binary arithmetic ------------------------------------------------------------------


@kernel("Add")
def _add(inputs, attrs):
    return [np.add(inputs[0], inputs[1])]


@kernel("Sub")
def _sub(inputs, attrs):
    return [np.subtract(inputs[0], inputs[1])]


@kernel("Mul")
def _mul(inputs, attrs):
    return [np.multiply(inputs[0], inputs[1])]


def _int_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C-style integer division (truncation toward zero)."""
    with np.errstate(**_ERR):
        q = np.floor_divide(a, b)
        r = np.remainder(a, b)
    if np.issubdtype(a.dtype, np.signedinteger):
        fix = (r != 0) & ((a < 0) != (b < 0))
        q = q + fix.astype(q.dtype)
    return q


@kernel("Div")
def _div(inputs, attrs):
    a, b = inputs[0], inputs[1]
    if np.issubdtype(a.dtype, np.integer):
        return [_int_div(a, b).astype(a.dtype)]
    with np.errstate(**_ERR):
        return [np.divide(a, b)]


@kernel("Pow")
def _pow(inputs, attrs):
    x, y = inputs[0], inputs[1]
    with np.errstate(**_ERR):
        if np.issubdtype(x.dtype, np.floating):
            r = np.power(x, y.astype(x.dtype))
        elif np.issubdtype(y.dtype, np.floating):
            r = np.power(x.astype(np.float64), y)
        else:
            r = np.power(x.astype(np.int64), y.astype(np.int64))
    return [r.astype(x.dtype)]


@kernel("Mod")
def _mod(inputs, attrs):
    a, b = inputs[0], inputs[1]
    with np.errstate(**_ERR):
        if int(attrs.get("fmod", 0)):
            return [np.fmod(a, b)]
        return [np.mod(a, b)]


# ---- unary math ---------------------------------------------------------------------------


def _unary(name: str, fn) -> None:
    @kernel(name)
    def k(inputs, attrs):
        return [_f(inputs[0], fn)]

    k.__name__ = f"_{name.lower()}"


for _name, _fn in {
    "Sqrt": np.sqrt,
    "Exp": np.exp,
    "Log": np.log,
    "Neg": np.negative,
    "Abs": np.abs,
    "Tanh": np.tanh,
    "Floor": np.floor,
    "Ceil": np.ceil,
    "Round": np.round,
    "Sign": np.sign,
    "Sin": np.sin,
    "Cos": np.cos,
    "Tan": np.tan,
    "Asin": np.arcsin,
    "Acos": np.arccos,
    "Atan": np.arctan,
    "Sinh": np.sinh,
    "Cosh": np.cosh,
    "Asinh": np.arcsinh,
    "Acosh": np.arccosh,
    "Atanh": np.arctanh,
    "BitwiseNot": np.invert,
}.items():
    _unary(_name, _fn)


@kernel("Reciprocal")
def _reciprocal(inputs, attrs):
    x = inputs[0]
    with np.errstate(**_ERR):
        return [np.divide(_c(x, 1), x).astype(x.dtype)]


# Erf: float64 evaluation. |x| < 0.5: Maclaurin series (relative error < 1e-12);
# otherwise erfc from the Chebyshev fit of Numerical Recipes (`erfcc`, fractional
# error < 1.2e-7), i.e. an erf error below 1.2e-7 relative for |x| >= 0.5.


def _erf_taylor_coeffs() -> list[float]:
    import math

    return [(-1) ** n / (math.factorial(n) * (2 * n + 1)) * 2 / math.sqrt(math.pi) for n in range(10)]


_ERF_T = _erf_taylor_coeffs()
_ERFC_NR = [
    -1.26551223, 1.00002368, 0.37409196, 0.09678418, -0.18628806,
    0.27886807, -1.13520398, 1.48851587, -0.82215223, 0.17087277,
]


def erf(x: np.ndarray) -> np.ndarray:
    """erf, elementwise; float32 in -> float32 arithmetic (in place), else float64."""
    x = np.asarray(x)
    dt = np.float32 if x.dtype in (np.float32, np.float16) else np.float64
    xd = x.astype(dt, copy=False)
    ax = np.abs(xd)
    # erfc(|x|) = t * exp(-x^2 + P(t)), t = 1 / (1 + |x|/2)
    t = ax * dt(0.5)
    t += dt(1.0)
    np.reciprocal(t, out=t)
    p = np.full_like(t, _ERFC_NR[9])
    for c in reversed(_ERFC_NR[:9]):
        p *= t
        p += dt(c)
    sq = np.square(ax)
    p -= sq
    with np.errstate(**_ERR):
        np.exp(p, out=p)
    p *= t  # erfc(|x|)
    np.subtract(dt(1.0), p, out=p)
    np.copysign(p, xd, out=p)
    small = ax < 0.5
    if small.any():
        xs = xd[small]
        z = xs * xs
        s = np.full_like(xs, _ERF_T[-1])
        for c in reversed(_ERF_T[:-1]):
            s *= z
            s += dt(c)
        p[small] = xs * s
    return p


@kernel("Erf")
def _erf(inputs, attrs):
    x = inputs[0]
    return [erf(x).astype(x.dtype)]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    if x.dtype == np.float16:
        return _sigmoid(x.astype(np.float32)).astype(np.float16)
    with np.errstate(**_ERR):
        e = np.exp(-np.abs(x))
        one = _c(x, 1)
        return np.where(x >= 0, one / (one + e), e / (one + e)).astype(x.dtype)


@kernel("Sigmoid")
def _sigmoid_k(inputs, attrs):
    return [_sigmoid(inputs[0])]


@kernel("Relu")
def _relu(inputs, attrs):
    x = inputs[0]
    return [np.maximum(x, np.zeros((), x.dtype))]


@kernel("LeakyRelu")
def _leaky_relu(inputs, attrs):
    x = inputs[0]
    a = _c(x, attrs.get("alpha", 0.01))
    return [np.where(x >= 0, x, x * a).astype(x.dtype)]


@kernel("PRelu")
def _prelu(inputs, attrs):
    x, slope = inputs[0], inputs[1]
    return [np.where(x >= 0, x, x * slope).astype(x.dtype)]


@kernel("Elu")
def _elu(inputs, attrs):
    x = inputs[0]
    a = _c(x, attrs.get("alpha", 1.0))
    with np.errstate(**_ERR):
        return [np.where(x >= 0, x, a * np.expm1(x)).astype(x.dtype)]


@kernel("Selu")
def _selu(inputs, attrs):
    x = inputs[0]
    a = attrs.get("alpha", 1.67326319217681884765625)
    g = attrs.get("gamma", 1.05070102214813232421875)
    with np.errstate(**_ERR):
        r = np.where(x > 0, g * x, g * (a * np.exp(x) - a))
    return [r.astype(x.dtype)]


@kernel("Celu")
def _celu(inputs, attrs):
    x = inputs[0]
    a = attrs.get("alpha", 1.0)
    with np.errstate(**_ERR):
        r = np.maximum(0, x) + np.minimum(0, a * np.expm1(x / a))
    return [r.astype(x.dtype)]


@kernel("ThresholdedRelu")
def _thresholded_relu(inputs, attrs):
    x = inputs[0]
    a = attrs.get("alpha", 1.0)
    return [np.where(x > a, x, 0).astype(x.dtype)]


@kernel("HardSigmoid")
def _hard_sigmoid(inputs, attrs):
    x = inputs[0]
    a = _c(x, attrs.get("alpha", 0.2))
    b = _c(x, attrs.get("beta", 0.5))
    return [np.clip(x * a + b, _c(x, 0), _c(x, 1)).astype(x.dtype)]


@kernel("HardSwish")
def _hard_swish(inputs, attrs):
    x = inputs[0]
    hs = np.clip(x * _c(x, 1 / 6) + _c(x, 0.5), _c(x, 0), _c(x, 1))
    return [(x * hs).astype(x.dtype)]


def _softplus(x: np.ndarray) -> np.ndarray:
    with np.errstate(**_ERR):
        return np.logaddexp(_c(x, 0), x).astype(x.dtype)


@kernel("Softplus")
def _softplus_k(inputs, attrs):
    return [_softplus(inputs[0])]


@kernel("Softsign")
def _softsign(inputs, attrs):
    x = inputs[0]
    return [(x / (_c(x, 1) + np.abs(x))).astype(x.dtype)]


@kernel("Mish")
def _mish(inputs, attrs):
    x = inputs[0]
    return [(x * np.tanh(_softplus(x))).astype(x.dtype)]


@kernel("Gelu")
def _gelu(inputs, attrs):
    x = inputs[0]
    if attrs.get("approximate", "none") == "tanh":
        xd = x.astype(np.float64)
        r = 0.5 * xd * (1 + np.tanh(np.sqrt(2 / np.pi) * (xd + 0.044715 * xd**3)))
    else:
        r = 0.5 * x * (1.0 + erf(x * (1 / np.sqrt(2))))
    return [r.astype(x.dtype)]


@kernel("Swish")
def _swish(inputs, attrs):
    x = inputs[0]
    xf = x.astype(np.float32) if x.dtype == np.float16 else x
    a = _c(xf, attrs.get("alpha", 1.0))
    return [(xf * _sigmoid(xf * a)).astype(x.dtype)]


@kernel("Shrink")
def _shrink(inputs, attrs):
    x = inputs[0]
    lambd = attrs.get("lambd", 0.5)
    bias = attrs.get("bias", 0.0)
    r = np.where(x < -lambd, x + bias, np.where(x > lambd, x - bias, 0))
    return [r.astype(x.dtype)]


@kernel("Clip")
def _clip(inputs, attrs):
    x = inputs[0]
    lo = opt(inputs, 1)
    hi = opt(inputs, 2)
    if lo is None and "min" in attrs:
        lo = np.asarray(attrs["min"], x.dtype)
    if hi is None and "max" in attrs:
        hi = np.asarray(attrs["max"], x.dtype)
    r = x
    if lo is not None:
        r = np.maximum(r, np.asarray(lo).astype(x.dtype).reshape(()))
    if hi is not None:
        r = np.minimum(r, np.asarray(hi).astype(x.dtype).reshape(()))
    if r is x:
        r = x.copy()
    return [r]


# ---- comparisons and logic ------------------------------------------------------------------

for _name, _fn in {
    "Equal": np.equal,
    "Less": np.less,
    "LessOrEqual": np.less_equal,
    "Greater": np.greater,
    "GreaterOrEqual": np.greater_equal,
    "And": np.logical_and,
    "Or": np.logical_or,
    "Xor": np.logical_xor,
    "BitwiseAnd": np.bitwise_and,
    "BitwiseOr": np.bitwise_or,
    "BitwiseXor": np.bitwise_xor,
}.items():

    def _mk(fn):
        def k(inputs, attrs):
            return [np.asarray(fn(inputs[0], inputs[1]))]

        return k

    kernel(_name)(_mk(_fn))


@kernel("Not")
def _not(inputs, attrs):
    return [np.logical_not(inputs[0])]


@kernel("IsNaN")
def _isnan(inputs, attrs):
    return [np.isnan(inputs[0])]


@kernel("IsInf")
def _isinf(inputs, attrs):
    x = inputs[0]
    pos = int(attrs.get("detect_positive", 1))
    neg = int(attrs.get("detect_negative", 1))
    r = np.zeros(x.shape, np.bool_)
    if pos:
        r |= np.isposinf(x)
    if neg:
        r |= np.isneginf(x)
    return [r]


@kernel("BitShift")
def _bitshift(inputs, attrs):
    x, y = inputs[0], inputs[1]
    if attrs.get("direction", "LEFT") == "LEFT":
        return [np.left_shift(x, y).astype(x.dtype)]
    return [np.right_shift(x, y).astype(x.dtype)]


@kernel("Where")
def _where(inputs, attrs):
    return [np.where(inputs[0], inputs[1], inputs[2])]


# ---- variadic -------------------------------------------------------------------------------


def _variadic(fn):
    def k(inputs, attrs):
        xs = [x for x in inputs if x is not None]
        r = xs[0]
        for x in xs[1:]:
            r = fn(r, x)
        if r is xs[0]:
            r = r.copy()
        return [r]

    return k


kernel("Max")(_variadic(np.maximum))
kernel("Min")(_variadic(np.minimum))
kernel("Sum")(_variadic(np.add))


@kernel("Mean")
def _mean(inputs, attrs):
    xs = [x for x in inputs if x is not None]
    r = xs[0]
    for x in xs[1:]:
        r = r + x
    return [(r / _c(xs[0], len(xs))).astype(xs[0].dtype)]


# ---- identity-like and casts ------------------------------------------------------------------


@kernel("Identity")
def _identity(inputs, attrs):
    return [inputs[0]]


@kernel("Dropout")
def _dropout(inputs, attrs):
    """Inference: identity. training_mode with ratio > 0: mask drawn from
    numpy's RandomState(seed) (seed attribute, 0 when absent), as ONNX's reference."""
    x = inputs[0]
    ratio = opt(inputs, 1)
    ratio = float(np.asarray(ratio).reshape(-1)[0]) if ratio is not None else attrs.get("ratio", 0.5)
    training = opt(inputs, 2)
    training = bool(np.asarray(training).reshape(-1)[0]) if training is not None else False
    if not training or ratio == 0:
        return [x, np.ones(x.shape, np.bool_)]
    rnd = np.random.RandomState(int(attrs.get("seed", 0)))
    mask = rnd.uniform(0, 1.0, x.shape) >= ratio
    return [(mask * x * (1.0 / (1.0 - ratio))).astype(x.dtype), mask]


def onnx_dtype(code: int) -> np.dtype:
    dt = ONNX_TO_NP.get(int(code))
    if dt is None:
        raise KernelError(f"unsupported ONNX element type {code}")
    return dt


def _float8e8m0(x: np.ndarray, saturate: bool, round_mode: str) -> np.ndarray:
    """float -> float8e8m0fnu (a power of two 2^(e-127), e = 0..254; 0xFF is NaN).

    The exponent of x as float32, rounded by `round_mode` on the mantissa ("up": any
    fraction bumps it, "nearest": ties to even, "down": truncate). ONNX's table:
    saturate maps Inf and overflow to E8M0_MAX (0xFE) and 0 to E8M0_MIN (0x00);
    without it those become NaN. The sign is ignored (negative input is undefined).
    """
    f = np.ascontiguousarray(x, dtype=np.float32)
    bits = f.view(np.uint32)
    e = ((bits >> 23) & 0xFF).astype(np.uint16)
    special = e == 0xFF
    if round_mode == "up":
        up = (bits & 0x7FFFFF) != 0
    elif round_mode == "nearest":
        g = (bits & 0x400000) != 0
        r = (bits & 0x200000) != 0
        st = (bits & 0x1FFFFF) != 0
        up = g & (r | st | (e > 0))
    elif round_mode == "down":
        up = np.zeros(f.shape, np.bool_)
    else:
        raise KernelError(f"Cast: unsupported round_mode '{round_mode}'")
    up &= ~special
    if saturate:
        up &= e != 0xFE
    out = (e + up).astype(np.uint16)
    nan = np.isnan(f)
    if saturate:
        out = np.where(np.isinf(f), 0xFE, out)
    else:
        out = np.where(special | (f == 0), 0xFF, out)
    out = np.where(nan, 0xFF, np.minimum(out, 0xFF)).astype(np.uint8)
    return out.view(ONNX_TO_NP[24])


def _cast_to(
    x: np.ndarray, dt: np.dtype, saturate: bool = True, round_mode: str = "up"
) -> np.ndarray:
    """x.astype(dt) with ONNX's rules for the narrow types (Cast, opset 25):

    * float8 E4M3FN/E4M3FNUZ/E5M2/E5M2FNUZ, saturate: +-Inf and values beyond the
      largest finite one become +-max, NaN stays NaN, the rest rounds to nearest
      even; without saturate ml_dtypes' conversion is the table's (overflow ->
      NaN, or Inf for E5M2);
    * float8 E8M0: `_float8e8m0`;
    * float4/float6 (no Inf or NaN): ml_dtypes' conversion, which saturates;
    * int4/uint4/int2/uint2 from floats: round to nearest even, then wrap around.
    """
    if x.dtype == dt:
        return x.copy()
    code = NP_TO_ONNX.get(dt)
    with np.errstate(**_ERR):
        if code == 24:
            return _float8e8m0(x, saturate, round_mode)
        if code in (17, 18, 19, 20):
            xf = x.astype(np.float32) if x.dtype != np.float64 else x
            if saturate:
                import ml_dtypes

                m = float(ml_dtypes.finfo(dt).max)
                xf = np.clip(xf, -m, m)  # NaN stays NaN
            return xf.astype(dt)
        if code in (21, 22, 25, 26) and (x.dtype.kind == "f" or is_narrow_float(x.dtype)):
            return np.rint(x.astype(np.float64)).astype(np.int64).astype(dt)
        if is_narrow(dt) and is_narrow(x.dtype):
            return x.astype(np.float32).astype(dt)  # via float32: exact for these
        return x.astype(dt)


@kernel("Cast")
def _cast(inputs, attrs):
    x = inputs[0]
    dt = onnx_dtype(attrs["to"])
    return [_cast_to(x, dt, bool(int(attrs.get("saturate", 1))), _round_mode(attrs))]


@kernel("CastLike")
def _cast_like(inputs, attrs):
    return [_cast_to(inputs[0], inputs[1].dtype, bool(int(attrs.get("saturate", 1))), _round_mode(attrs))]


def _round_mode(attrs) -> str:
    rm = attrs.get("round_mode", "up")
    return rm.decode() if isinstance(rm, bytes) else str(rm)
