"""Spark operators: ``spark_sql`` and ``spark``. A subtask collects its input as one
Arrow table, hands it to the TaskExecutor's SparkSession (``createDataFrame`` from
Arrow), runs the query or function, and emits the result (``toArrow``). Each task
works in its own ``newSession()`` of the executor's session: one JVM, but separate
temporary views, so two slots of one executor never see each other's ``input``."""
from __future__ import annotations

import logging
from typing import Any, Callable

import pyarrow as pa

from yarnflow.core.failures import ContractError
from yarnflow.core.operators.base import Operator, check_declared, concat, declared_schema
from yarnflow.core.operators.context import OperatorContext

log = logging.getLogger(__name__)

INPUT_VIEW = "input"


class SparkTaskError(RuntimeError):
    """Spark refused or failed the work; the message is Spark's, without the JVM stack."""


def describe_spark_error(err: BaseException) -> str:
    """Spark's own message (error class, text, SQLSTATE), cut before the query plan
    and the Java stack trace that follow it."""
    text = str(err).strip()
    for marker in ("\n'", "\n+- ", "\n\tat ", "\nJVM stacktrace:"):
        if marker in text:
            text = text[:text.index(marker)]
    return text[:2000].strip()


def _is_spark_error(err: BaseException) -> bool:
    try:
        from pyspark.errors import PySparkException
        from py4j.protocol import Py4JError
    except ImportError:
        return False
    return isinstance(err, (PySparkException, Py4JError))


class SparkOperator(Operator):
    def __init__(self, name: str, sql: str | None = None,
                 fn: Callable[[Any, Any], Any] | None = None, output_schema: Any = None) -> None:
        if (sql is None) == (fn is None):
            raise ValueError("a Spark operator runs either SQL or a function")
        self.name = name
        self.sql = sql
        self.fn = fn
        self.declared = declared_schema(output_schema, f"Spark operator '{name}'")

    def schema(self, inputs: list[pa.Schema | None]) -> pa.Schema | None:
        """What Spark returns is unknown on the client unless declared."""
        return self.declared

    def run(self, ctx: OperatorContext) -> None:
        table = concat(ctx.input(0))
        if table is None:
            log.warning("%s: no input batches (no schema either): nothing for Spark to read",
                        ctx.vertex_name)
            return
        spark = ctx.spark().newSession()
        try:
            frame = spark.createDataFrame(table)
            if self.sql is not None:
                frame.createOrReplaceTempView(INPUT_VIEW)
                result = spark.sql(self.sql)
            else:
                assert self.fn is not None   # checked in __init__
                result = self.fn(spark, frame)
                if not hasattr(result, "toArrow"):
                    raise ContractError(f"spark function '{self.name}' must return a Spark "
                                    f"DataFrame, got {type(result).__name__}")
            output = result.toArrow()
        except Exception as err:
            if not _is_spark_error(err):
                raise
            what = "Spark SQL" if self.sql is not None else f"spark function '{self.name}'"
            raise SparkTaskError(f"{what} failed: {describe_spark_error(err)}") from None
        for batch in output.to_batches(max_chunksize=ctx.batch_rows):
            check_declared(batch, self.declared, f"Spark operator '{self.name}'")
            ctx.emit(batch)
