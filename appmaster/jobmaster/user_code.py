"""The one place an ApplicationMaster runs code a user wrote, and why it must.

A pipeline's operators run in TaskExecutors: here they stay the bytes they arrived as
(``yarnflow.core.user_code.UserCode``, never ``load``ed but here). Two user objects run on the master, as in
Flink: a source lists its input splits (Flink's ``InputFormat.createInputSplits``),
so that splits are handed out on demand and to the hosts that store them; and a
sink's committer makes its output visible once, when the job finished, and
discards it otherwise (``InitializeOnMaster``/``FinalizeOnMaster``), which no single
subtask can do. Both are unpickled here, when the JobMaster starts, never when it
is made, so a bad one fails the job with its cause instead of rejecting it unread.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from yarnflow.core.user_code import UserCode

if TYPE_CHECKING:     # the operators import pyarrow: loaded once a job lists its splits
    from yarnflow.core.operators.base import Operator, OutputCommitter
    from yarnflow.core.operators.sources import Source


def load_source(code: UserCode[Operator]) -> Source:
    """A source operator, for its splits (``create_input_splits``, ``for_readers``):
    the vertex's, or the head of its chain."""
    from yarnflow.core.operators.chain import ChainedOperator
    from yarnflow.core.operators.sources import Source
    operator = code.load()
    if isinstance(operator, ChainedOperator):
        operator = operator.head
    if not isinstance(operator, Source):
        raise TypeError(f"a source vertex holds {type(operator).__name__}, not a Source")
    return operator


def load_committer(code: UserCode[OutputCommitter]) -> OutputCommitter:
    """A sink's committer (``setup``, ``commit``, ``abort``)."""
    return code.load()


def for_readers(code: UserCode[Operator], readers: Source) -> UserCode[Operator]:
    """What a source vertex hands its subtasks instead of its operator, pickled once for
    all of them: the source's readers, heading its chain where it has one."""
    from yarnflow.core.operators.chain import ChainedOperator
    operator = code.load()
    if isinstance(operator, ChainedOperator):
        return UserCode.pickled(operator.with_head(readers))
    return UserCode.pickled(readers)
