"""Operators: what a task runs. The client builds these objects and ships them as
cloudpickle bytes; a task calls ``run(ctx)`` with its inputs and output."""
from yarnflow.core.operators.base import Operator
from yarnflow.core.operators.context import OperatorContext
from yarnflow.core.operators.sources import ParquetSource, Source, TableSource
from yarnflow.core.operators.csv_source import CsvSource
from yarnflow.core.operators.transforms import (FilterOperator, FlatMapOperator, MapOperator,
                                                 SelectOperator)
from yarnflow.core.operators.join import HashJoinOperator
from yarnflow.core.operators.aggregate import AggregateOperator
from yarnflow.core.operators.phase import Phase
from yarnflow.core.operators.sinks import ParquetSink

__all__ = ["Operator", "OperatorContext", "Source", "ParquetSource", "CsvSource", "TableSource",
           "MapOperator", "FilterOperator", "FlatMapOperator", "SelectOperator", "HashJoinOperator",
           "AggregateOperator", "Phase", "ParquetSink"]
