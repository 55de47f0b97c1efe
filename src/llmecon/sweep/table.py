"""Sweep rows as Arrow tables and Parquet bytes (the on-disk layout is in ``store``).

One schema for every row (analytic and simulation; ``kind`` tells them apart, the other kind's
columns are null): identity and axis columns, then the outputs the spec asked for, then ``note``.
Unpriced $ figures are null, never NaN. Parts are zstd-compressed with dictionary encoding on the
text columns only (the float columns are nearly all distinct): ~26 bytes per analytic row.
"""

from __future__ import annotations

import numpy as np

from ..errors import LlmeconError
from ..step.roofline import BOUNDS
from .grid import Group, Scenario
from .spec import OUTPUTS

#: the plan's columns of a row, taken from ``Plan.as_dict()`` (``plan`` itself is its label)
PLAN_COLUMNS = ("tp", "ep", "pp", "adp", "chips")


def _pa():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - pyarrow is a core dependency
        raise LlmeconError("llmecon sweep writes Parquet and needs pyarrow: pip install pyarrow") from None
    return pa, pq


def schema(outputs: tuple[str, ...]):
    pa, _ = _pa()
    s, i32, i64, f64 = pa.string(), pa.int32(), pa.int64(), pa.float64()
    ident = [("point_id", i64), ("kind", s), ("model", s), ("system", s), ("plan", s), ("tp", i32), ("ep", i32),
             ("pp", i32), ("adp", i32), ("chips", i32), ("weight_dtype", s), ("kv_dtype", s), ("phase", s),
             ("batch", f64), ("context", f64), ("policy", s), ("workload", s), ("rate_per_s", f64),
             ("seed", i64), ("batch_cap", i64), ("price_per_chip_hour", f64)]
    types = {"bound": s, "fits": pa.bool_(), "completed": i64, "rejected": i64}
    outs = [(name, types.get(name, f64)) for name in OUTPUTS if name in outputs]
    return pa.schema(ident + outs + [("note", s)])


def identity(model, system, plan, weight_dtype: str | None = None, kv_dtype: str | None = None) -> dict:
    """What a row evaluated (docs/sweep.md): model, system, the plan's label and degrees, formats."""
    shown = plan.as_dict()
    return {"model": model.name, "system": system.name, "plan": shown["label"],
            **{k: shown[k] for k in PLAN_COLUMNS}, "weight_dtype": weight_dtype or model.weight_dtype,
            "kv_dtype": kv_dtype or model.kv_dtype}


def _per_group(values: list, lengths: np.ndarray, type_):
    """A column repeating ``values[k]`` ``lengths[k]`` times (one value per group segment)."""
    pa, _ = _pa()
    if pa.types.is_string(type_):
        codes = pa.array(np.repeat(np.arange(len(values), dtype=np.int32), lengths))
        return pa.DictionaryArray.from_arrays(codes, pa.array(values, type_)).cast(type_)
    return pa.array(np.repeat(np.asarray(values), lengths), type_)


def analytic_table(groups: tuple[Group, ...], first_points: np.ndarray, rows: np.ndarray, sch):
    """Arrow table of evaluated analytic rows (``analytic.ROW_DTYPE``, ascending ids) in schema ``sch``:
    the rows' own columns plus each group's identity columns."""
    from .analytic import segments

    pa, _ = _pa()
    n = rows.shape[0]
    segs = segments(rows["point_id"], first_points)
    groups = [groups[gi] for gi, _, _ in segs]
    lengths = np.asarray([e - b for _, b, e in segs], dtype=np.int64)
    idents = [{"kind": "analytic", **identity(g.model, g.system, g.plan, g.weight_dtype, g.kv_dtype),
               "phase": g.phase} for g in groups]
    cols = {k: _per_group([d[k] for d in idents], lengths, sch.field(k).type) for k in (idents[0] if idents else ())}
    for name in rows.dtype.names:
        if name not in sch.names:
            continue
        x = rows[name]
        if name == "bound":
            cols[name] = pa.DictionaryArray.from_arrays(pa.array(x), pa.array(BOUNDS)).cast(pa.string())
        elif x.dtype.kind == "f":
            cols[name] = pa.array(x, mask=np.isnan(x))
        else:
            cols[name] = pa.array(x)
    return pa.table([cols.get(f.name, pa.nulls(n, f.type)) for f in sch], schema=sch)


def simulation_table(sc: Scenario, row: dict, sch):
    """Arrow table of one simulated scenario (``simulation.run_scenario``'s row)."""
    pa, _ = _pa()
    consts = {"kind": "simulation", **identity(sc.model, sc.system, sc.plan)}
    cols = {k: pa.array([v], sch.field(k).type) for k, v in consts.items()}
    for k, v in row.items():
        if k in sch.names:
            cols[k] = pa.array([v], sch.field(k).type)
    return pa.table([cols.get(f.name, pa.nulls(1, f.type)) for f in sch], schema=sch)


def write_options(sch) -> dict:
    pa, _ = _pa()
    return {"compression": "zstd", "use_dictionary": [f.name for f in sch if pa.types.is_string(f.type)]}


def encode(table) -> bytes:
    """A table as the bytes of one Parquet file. Workers encode, so the writer only writes bytes."""
    pa, pq = _pa()
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **write_options(table.schema))
    return sink.getvalue().to_pybytes()


def encode_analytic(rows: np.ndarray, *, groups: tuple[Group, ...], first_points: np.ndarray,
                    outputs: tuple[str, ...]) -> bytes:
    """Evaluated rows -> Parquet bytes (runs on a Dask worker, or in-process)."""
    return encode(analytic_table(groups, first_points, rows, schema(outputs)))


def encode_scenario(sc: Scenario, outputs: tuple[str, ...]) -> bytes:
    """Run one simulation scenario -> Parquet bytes (one Dask task per scenario, or in-process)."""
    from .simulation import run_scenario

    return encode(simulation_table(sc, run_scenario(sc), schema(outputs)))
