"""Which step of a two-step operator a vertex runs.

An aggregate, a distinct, a limit and a top-N are planned as Spark plans its partial
and final ``HashAggregate`` and its ``LocalLimit``/``GlobalLimit``, and Flink its
local/global aggregate: a local step chained to each producer, so that the exchange
carries what each producer reduced its rows to, then a final step past the exchange.
An operator that cannot be split (an aggregate of a function that needs every row)
runs whole. Every such operator takes its phase as this one enum, so a plan, explain
and the operator itself read a step the same way.
"""
from __future__ import annotations

import enum


class Phase(enum.Enum):
    LOCAL = "local"     # chained to a producer, over that producer's rows; emits partials
    FINAL = "final"     # past the exchange, over the local steps' partials
    WHOLE = "whole"     # one step over all the rows, nothing before it

    @property
    def reads_rows(self) -> bool:
        """Its input is rows, not a local step's partial results."""
        return self is not Phase.FINAL

    @property
    def finishes(self) -> bool:
        """It gives the final result (a local step gives partial results)."""
        return self is not Phase.LOCAL
