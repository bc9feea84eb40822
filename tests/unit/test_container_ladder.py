"""Session container sizes: the smallest size that fits, and a clear refusal."""
from __future__ import annotations

import pytest

from yarnflow.core.container_ladder import ContainerLadder, NoContainerFits, parse_container_sizes
from yarnflow.core.resources import ResourceSpec as R


def test_each_profile_gets_the_smallest_container_whose_slot_fits():
    ladder = ContainerLadder(parse_container_sizes("4c-8g, 1c-1536m, 2c-3072m"), 256)
    assert ladder.spec_for(R(1, "1024m")).container == R(1, "1536m")
    assert ladder.spec_for(R(1, "1281m")).container == R(2, "3072m")     # memory decides
    assert ladder.spec_for(R(2, "512m")).container == R(2, "3072m")      # cores decide
    assert ladder.spec_for(R(3, "7g")).container == R(4, "8g")
    assert ladder.spec_for(R(1, "1280m")).slot_profile == R(1, "1280m")  # container - overhead


def test_a_profile_beyond_the_largest_size_is_refused_naming_the_sizes():
    ladder = ContainerLadder(parse_container_sizes("1c-1536m, 2c-3072m"), 256)
    with pytest.raises(NoContainerFits) as err:
        ladder.spec_for(R(4, "2g"))
    message = str(err.value)
    assert "4c-2048m" in message and "1c-1536m (slot 1c-1280m)" in message
    assert "2c-3072m (slot 2c-2816m)" in message and "session.container-sizes" in message


@pytest.mark.parametrize("text", ["", "2c", "big", "2-3g"])
def test_malformed_sizes_are_refused_with_the_format(text):
    with pytest.raises(ValueError, match="container size|names no container size"):
        parse_container_sizes(text)


def test_a_size_smaller_than_the_executor_overhead_is_refused():
    with pytest.raises(ValueError, match="taskmanager.memory.overhead"):
        ContainerLadder([R(1, "200m")], 256)
