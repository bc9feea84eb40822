"""The columns of every vertex of a pipeline, from its sources on, checked against
every column an operator names, on the client before anything is submitted (Spark's
analyzer: ``cannot resolve 'customer_id' given input columns``). A wrong column found
in the executors costs every attempt of the restart strategy; found here, it costs
one footer read."""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence

import pyarrow as pa

from yarnflow.core.jobgraph import InvalidPipelineError
from yarnflow.core.operators.base import PlanError, require_columns

# (the vertex an edge comes from, the keys it is partitioned on) for each input edge
EdgeKeys = Callable[[Any], Iterable[tuple[Any, Sequence[str]]]]


def check_schemas(order: Iterable[Any], inputs_of: Callable[[Any], list[Any]],
                  edge_keys: EdgeKeys, name_of: Callable[[Any], str] = lambda v: v.name
                  ) -> dict[str, pa.Schema | None]:
    """Every vertex's output schema (given producers before consumers), keyed by vertex
    id; None where unknown (after a function that declared none), and checking stops
    there. Raises InvalidPipelineError for a column a vertex names that its input
    lacks. Anything else that goes wrong finding a schema makes it unknown: this check
    never refuses a pipeline that would run. ``name_of``: the name an error gives a
    vertex (a step the planner added goes by its operator's)."""
    schemas: dict[str, pa.Schema | None] = {}
    for vertex in order:
        inputs = [schemas.get(v.id) for v in inputs_of(vertex)]
        try:
            schema = vertex.operator.value.schema(inputs)
            for upstream, keys in edge_keys(vertex):
                known = schemas.get(upstream.id)
                if keys and known is not None:
                    require_columns(known, keys,
                                    f"the output of '{upstream.name}' that key_by partitions")
        except PlanError as err:
            raise InvalidPipelineError(name_of(vertex), err.problem, err.fix) from None
        except Exception:  # noqa: BLE001 - e.g. a footer only the cluster can read: unknown
            schema = None
        schemas[vertex.id] = schema if isinstance(schema, pa.Schema) else None
    return schemas
