"""Operators: what a task runs. The client builds these objects and ships them as
cloudpickle bytes; a task calls ``run(ctx)`` with its inputs and output."""
from yarnflow.taskexecutor.operators.base import Operator, OperatorContext
from yarnflow.taskexecutor.operators.sources import CsvSource, ParquetSource, Source, TableSource
from yarnflow.taskexecutor.operators.transforms import FilterOperator, FlatMapOperator, MapOperator
from yarnflow.taskexecutor.operators.join import HashJoinOperator
from yarnflow.taskexecutor.operators.aggregate import AggregateOperator
from yarnflow.taskexecutor.operators.sinks import ParquetSink

__all__ = ["Operator", "OperatorContext", "Source", "ParquetSource", "CsvSource", "TableSource",
           "MapOperator", "FilterOperator", "FlatMapOperator", "HashJoinOperator",
           "AggregateOperator", "ParquetSink"]
